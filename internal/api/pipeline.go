package api

import (
	"context"
	"net/http"

	"github.com/timebox-dev/timebox/internal/admission"
	"github.com/timebox-dev/timebox/internal/aoai"
	"github.com/timebox-dev/timebox/internal/prompt"
)

// The chat pipeline, one for both dialects (POST /api/chat and the OpenAI
// surface): they differ at its two ends only, how the request is read (a
// chatReader) and how the answer is written (an answerWriter). In between,
// every step is the same: the body's admission, the upstream call, the
// answer whole or streamed, the quota's settlement, the log line.

// chatCall is a chat request ready for Azure OpenAI: what is sent, how the
// prompt was fitted, and how its answer is written.
type chatCall struct {
	req aoai.Request
	fit prompt.Result
	// stream: the caller asked for the answer as it arrives; long: it is a
	// long answer (background mode, in hops), which has its own writer.
	stream, long bool
	out          answerWriter
}

// A chatReader is a dialect's reading of a request: its body decoded
// (its cost already taken from ticket) and everything before the upstream
// call done, the call's own costs taken from ticket too.
type chatReader func(w http.ResponseWriter, r *http.Request, ticket *admission.Ticket) (*chatCall, error)

// An answerWriter writes one call's answer in its dialect. The pipeline
// calls it in order: for an answer written whole, whole before the
// upstream call and body after it; for a stream, streamed before the call,
// then done or failed once, when the stream has begun.
type answerWriter interface {
	// whole readies req to gather, as the answer arrives, what the body
	// of the 200 needs.
	whole(req *aoai.Request)
	// body is the 200's JSON body for the answer resp.
	body(ctx context.Context, resp *aoai.Response) []byte
	// streamed readies req to send the answer on es as it arrives, its
	// pieces to ctx's tally (deltas).
	streamed(ctx context.Context, req *aoai.Request, es *eventStream)
	// done ends the stream of the finished answer resp (relay).
	done(ctx context.Context, es *eventStream, resp *aoai.Response)
	// failed ends with row, err's row of the error table, a stream that
	// err cut after it began.
	failed(ctx context.Context, es *eventStream, row errorRow, err error)
	// refused is the error answered for err, the upstream call's failure,
	// when nothing of the answer has been written.
	refused(err error) error
}

// serveChat is the chat pipeline with read for its dialect's reading of
// the request. The caller's deadline and check ran before it (see routes);
// then, in order: admission of the body, the dialect's reading (decoding,
// admission of the material, the material, the prompt check, the quota's
// reservation), the upstream call, and the answer, whole or streamed. Any
// failure goes through the error table (fail).
func (s *server) serveChat(read chatReader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ticket := s.Admission.Ticket()
		defer ticket.Release()
		// The request's cost is taken before each commitment, the body
		// before it is read.
		if err := ticket.Take(admission.BodyCost(r.ContentLength, MaxBodyBytes)); err != nil {
			s.fail(w, r, err)
			return
		}
		call, err := read(w, r, ticket)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch {
		case call.long:
			s.longAnswer(w, r, call)
		case call.stream:
			s.stream(w, r, call)
		default:
			s.answer(w, r, call)
		}
	})
}

// answer makes the upstream call and writes its answer whole: the 200, or
// the failure's error answer.
func (s *server) answer(w http.ResponseWriter, r *http.Request, call *chatCall) {
	r, cancel := s.untilWhole(w, r)
	defer cancel()
	ctx := r.Context()
	call.out.whole(&call.req)
	resp, err := s.complete(ctx, call)
	if err != nil {
		s.fail(w, r, call.out.refused(err))
		return
	}
	s.settleAnswered(ctx)
	stampTiming(w, r)
	writeBody(w, http.StatusOK, call.out.body(ctx, resp))
}
