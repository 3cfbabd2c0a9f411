// Package aoaitest simulates an Azure OpenAI resource's chat completions
// endpoint, faithfully to the wire recordings in internal/aoaitest/testdata/aoai: the
// fake the rest of timebox is tested against (pkgsite's proxytest, grown
// up). A *Server is an http.Handler: mount it in httptest.NewServer, serve it
// on an internal/memnet listener inside a testing/synctest bubble, or run it
// standalone with cmd/aoaisim.
//
// # Routes
//
//   - POST /openai/v1/chat/completions: the v1 API; the deployment is the
//     body's "model".
//   - POST /openai/deployments/{name}/chat/completions?api-version=V: the
//     deployments API. Without api-version, and for every other path or
//     method, the answer is 404 {"error":{"code":"404","message":"Resource
//     not found"}}.
//   - POST /openai/v1/responses, GET /openai/v1/responses/{id} (with
//     ?stream=true&starting_after=N, a resume), POST
//     /openai/v1/responses/{id}/cancel, DELETE /openai/v1/responses/{id}:
//     the Responses API, whose background generations run on when their
//     call ends (responses.go, generation.go).
//
// # Order of checks
//
// A request is checked the way Azure does, and the first failing check
// answers: route (404), credentials (401, plain JSON even for stream=true),
// deployment (404 DeploymentNotFound), body (400 invalid_request_error:
// unparseable JSON, no messages, max_tokens below 1, a malformed directive),
// scripted fault (below), tokens-per-minute limit (429), context window (400
// context_length_exceeded), then the answer: 200 JSON, or server-sent events
// when "stream" is true.
//
// Prompt tokens are counted with internal/tokens for the model, so usage,
// the rate limit and context_length_exceeded agree with the server's own
// counting. The answer is deterministic: "1, 2, ..., N." for a prompt that
// says "count to N" (the recordings' prompt), otherwise a short paragraph
// quoting the question's first words; max_tokens cuts it, with finish_reason
// "length".
//
// # Latency and time
//
// Options.TimeToFirstToken and Options.PerToken model latency. Every wait is a
// real timer that also watches the request's context, so inside a
// testing/synctest bubble the waits take no real time, and a client that goes
// away is noticed at once and recorded as cancelled.
//
// # Rate limit
//
// With Options.TPM set, each deployment admits requests on Azure's estimate
// (prompt tokens + max_tokens) over a sliding 60 s window. A request that
// does not fit gets 429 with retry-after (whole seconds, rounded up),
// retry-after-ms, x-ratelimit-remaining-tokens, policy-id and the recorded
// message; one whose estimate alone exceeds TPM gets the 429 no wait clears:
// "Please retry after 86400 seconds", retry-after: 86400. The request rate
// is limited too, as Azure pairs it with TPM: TPM/1000 requests in any 10 s
// (6 RPM per 1000 TPM); one over it gets the recorded "exceeded call rate
// limit" 429 with the wait until the oldest request leaves the 10 s window.
//
// # Scripted faults
//
// A directive in any message's content picks a fault for that request; when
// several are present the last one wins. Its grammar:
//
//	directive = "[[sim:" kind *( " " key "=" value ) "]]"
//	kind      = "hang" | "slow" | "status" | "reset" | "malformed" | "throttle" | "filter"
//
// Keys every kind takes: after=MS (wait before the fault), times=N (only the
// first N requests carrying the same id fail; later ones are answered
// normally), id=X (the counter's name, 1-64 of A-Z a-z 0-9 . _ -; without it
// the directive's own text names the counter), backend=NAME (the directive
// plays only on the Server whose Options.Backend is NAME; another answers
// as if it were not there: two Servers so play a pool of two, one
// throttled, one with room). Counters live in the Server.
//
//   - hang: send nothing until the client goes away (recorded Cancelled).
//   - slow ms=N: a normal answer whose first byte comes N ms after the
//     request (replacing TimeToFirstToken; a stream is then paced by PerToken).
//   - status code=C: answer C (400-599). 500 has the recorded body; 502, 503
//     and 504, which were never recorded, the same server_error shape; 401
//     and 404 the recorded 401 and DeploymentNotFound bodies; 429 the
//     rate-limit body without retry-after. A 5xx with retry-ms=N also
//     names a wait: retry-after-ms N and retry-after N/1000 rounded up.
//   - reset: close the connection without an answer (RST on TCP).
//   - malformed: 200 application/json with a truncated, unparseable body.
//   - throttle s=N: 429 with retry-after N and retry-after-ms N*1000 (N
//     defaults to 1).
//   - filter: the recorded content-filter 400 (part=prompt, the default);
//     with part=completion, a 200 whose answer is cut short with
//     finish_reason "content_filter" and the tripped category flagged.
//
// hang, reset and filter also take tokens=N: the fault strikes in the
// middle of the answer, once N of its tokens have gone out (paced by the
// latency model): hang stalls the stream until the client goes away, reset
// drops the connection without the body's end, filter ends the answer with
// finish_reason "content_filter" (part=completion implied). An answer of N
// tokens or fewer is not touched. Without stream: true the fault strikes
// when N tokens would have been generated, before any byte.
//
// A request that plays a fault spends no rate-limit quota (but a tokens=N
// one, which answers first), and a fault's answer comes at once (after its
// after=), not paced by the latency model. A
// directive that does not parse is answered 400, so a typo is loud. See
// README.md beside this file for what each fault stands for and what timebox
// should answer.
package aoaitest
