"""The official OpenAI SDK for Python (openai on PyPI, pinned by hash in
sdk/python/requirements.txt), unchanged but for its endpoint and its token,
against the real handler in AUTH_MODE=entra and the simulator: as an OpenAI
client (base_url '<app>/openai/v1', the token as api_key) and as an Azure
client (AzureOpenAI with azure_ad_token_provider). timebox's OpenAI surface
answers it, and the SDK's own retries obey timebox's rule (x-should-retry).
Upstream calls are counted from the simulator's log, one line per call."""

from __future__ import annotations

import time
import unittest
from dataclasses import dataclass, field
from typing import Any, Callable

import openai
from openai import AzureOpenAI, OpenAI

from stack import DEPLOYMENT, OID, Stack

STACK: Stack


def setUpModule() -> None:
    global STACK
    STACK = Stack()


def tearDownModule() -> None:
    STACK.stop()


@dataclass
class Counted:
    """What a call returned or raised, with the handler's request lines and the simulator's upstream lines it made."""

    result: Any = None
    error: openai.APIError | None = None
    log: list[dict] = field(default_factory=list)
    upstream: list[dict] = field(default_factory=list)


def counted(fn: Callable[[], Any], requests: int = 1, upstream: int = 1) -> Counted:
    mark = STACK.mark()
    out = Counted()
    try:
        out.result = fn()
    except openai.APIError as err:
        out.error = err
    out.log, out.upstream = STACK.counted(mark, requests, upstream)
    out.log = [l for l in out.log if l.get("route", "").startswith("/openai/")]
    return out


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
        },
    }
]


class TokenProvider:
    """The signed-in user's token for this app, as azure.identity's get_bearer_token_provider gives it; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._token = STACK.token()

    def __call__(self) -> str:
        self.calls += 1
        return self._token


class Surface:
    """The cases both clients must pass; a subclass says how its client is made and which route it calls."""

    route: str
    name: str

    def client(self, provider: Callable[[], str]) -> OpenAI:
        raise NotImplementedError

    def setUp(self) -> None:
        self.provider = TokenProvider()
        self.sdk = self.client(self.provider)

    def test_an_answer(self) -> None:
        c = counted(lambda: self.sdk.chat.completions.create(model=DEPLOYMENT, messages=ask("Count to 5.")))
        self.assertIsNone(c.error)
        self.assertEqual(c.result.object, "chat.completion")
        self.assertEqual(c.result.choices[0].message.content, "1, 2, 3, 4, 5.")
        self.assertEqual(c.result.choices[0].finish_reason, "stop")
        self.assertGreater(c.result.usage.completion_tokens, 0)
        self.assertEqual(len(c.upstream), 1)
        self.assertEqual([(l["route"], l["status"], l["callerOid"]) for l in c.log], [(self.route, 200, OID)])

    def test_a_stream(self) -> None:
        def run() -> tuple[str, Any, int]:
            text, usage, chunks = "", None, 0
            for chunk in self.sdk.chat.completions.create(
                model=DEPLOYMENT, messages=ask("Count to 20."), stream=True, stream_options={"include_usage": True}
            ):
                chunks += 1
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
                usage = usage or chunk.usage
            return text, usage, chunks

        c = counted(run)
        self.assertIsNone(c.error)
        text, usage, chunks = c.result
        self.assertEqual(text, ", ".join(str(i) for i in range(1, 21)) + ".")
        self.assertGreater(chunks, 10, "streamed in pieces")
        self.assertGreater(usage.completion_tokens, 0, "the usage chunk, asked for")
        self.assertEqual(len(c.upstream), 1)
        self.assertTrue(c.log[0]["stream"])

    def test_a_tool_call_and_its_result(self) -> None:
        messages: list[Any] = ask("What is the weather in Paris?")
        first = counted(lambda: self.sdk.chat.completions.create(model=DEPLOYMENT, messages=messages, tools=TOOLS))
        self.assertIsNone(first.error)
        choice = first.result.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        call = choice.message.tool_calls[0]
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(call.function.arguments, '{"question":"What is the weather in Paris?"}')

        # The SDK's own round trip: the answer's message back as it came, then the tool's result.
        messages += [choice.message, {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 °C."}]
        second = counted(lambda: self.sdk.chat.completions.create(model=DEPLOYMENT, messages=messages, tools=TOOLS))
        self.assertIsNone(second.error)
        self.assertEqual(second.result.choices[0].finish_reason, "stop")
        self.assertTrue(second.result.choices[0].message.content)

        # Streamed, the call's pieces pass through as delta.tool_calls.
        def streamed() -> tuple[str, str, str | None]:
            name, args, finish = "", "", None
            for chunk in self.sdk.chat.completions.create(model=DEPLOYMENT, messages=messages[:1], tools=TOOLS, stream=True):
                for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    name += (tc.function and tc.function.name) or ""
                    args += (tc.function and tc.function.arguments) or ""
                finish = finish or (chunk.choices[0].finish_reason if chunk.choices else None)
            return name, args, finish

        third = counted(streamed)
        self.assertIsNone(third.error)
        self.assertEqual(third.result, ("get_weather", '{"question":"What is the weather in Paris?"}', "tool_calls"))

    def test_the_deadline_is_asked_once_and_carries_timeboxs_message_and_code(self) -> None:
        c = counted(lambda: self.sdk.chat.completions.create(model=DEPLOYMENT, messages=ask("[[sim:hang]] hi")))
        self.assertEqual(len(c.upstream), 1, "the SDK did not retry the deadline")
        self.assertEqual([l["status"] for l in c.log], [500])
        self.assertIsInstance(c.error, openai.InternalServerError)
        self.assertEqual(c.error.status_code, 500)
        self.assertEqual(c.error.code, "deadline_exceeded")
        self.assertRegex(c.error.message, "did not answer in time")
        self.assertEqual(c.error.response.headers["x-should-retry"], "false")

    def test_a_fast_503_is_retried_by_the_sdk_then_answered(self) -> None:
        c = counted(
            lambda: self.sdk.chat.completions.create(
                model=DEPLOYMENT, messages=ask(f"[[sim:status code=503 times=1 id=py-503-{self.name}]] Count to 3.")
            ),
            requests=2,
            upstream=2,
        )
        self.assertIsNone(c.error)
        self.assertEqual(c.result.choices[0].message.content, "1, 2, 3.")
        self.assertEqual([u["status"] for u in c.upstream], [503, 200])
        self.assertEqual([l["status"] for l in c.log], [503, 200])
        self.assertEqual(self.provider.calls, 2, "a token asked for on every attempt")

    def test_a_429_whose_wait_does_not_fit_is_surfaced_at_once(self) -> None:
        c = counted(
            lambda: self.sdk.chat.completions.create(
                model=DEPLOYMENT, messages=ask(f"[[sim:throttle s=20 times=1 id=py-429-{self.name}]] hi")
            )
        )
        self.assertEqual(len(c.upstream), 1, "the SDK did not retry the 429")
        self.assertEqual([l["status"] for l in c.log], [429])
        self.assertIsInstance(c.error, openai.RateLimitError)
        self.assertEqual(c.error.code, "rate_limited")
        self.assertEqual(c.error.response.headers["x-should-retry"], "false")
        self.assertEqual(c.error.response.headers["retry-after"], "20")

    def test_a_stream_cut_or_at_the_deadline_ends_in_an_error_after_the_text_so_far(self) -> None:
        # (case, directive, the error's code, its message, the text so far): either way one upstream call, not asked again.
        cases = [
            ("a mid-stream cut", "[[sim:reset tokens=10]]", "upstream_error", None, r"^1, 2, 3"),
            ("the deadline", "[[sim:hang tokens=5]]", "deadline_exceeded", "did not answer in time", r"^1, 2"),
        ]
        for case, directive, code, message, so_far in cases:
            with self.subTest(case):
                pieces: list[str] = []

                def run() -> None:
                    for chunk in self.sdk.chat.completions.create(model=DEPLOYMENT, messages=ask(f"{directive} Count to 50."), stream=True):
                        if chunk.choices:
                            pieces.append(chunk.choices[0].delta.content or "")

                c = counted(run)
                self.assertIsInstance(c.error, openai.APIError)
                self.assertEqual(c.error.code, code)
                if message:
                    self.assertRegex(c.error.message, message)
                self.assertRegex("".join(pieces), so_far, "the text so far arrived first")
                self.assertEqual(len(c.upstream), 1, "not asked again")

    def test_the_sdks_timeout_shortens_the_budget(self) -> None:
        # A read timeout of 4 s, under the 6 s budget: timebox answers its deadline 2 s (CLIENT_TIMEOUT_MARGIN)
        # before it, not retried; else the SDK would time out itself, and retry.
        c = counted(lambda: self.sdk.with_options(timeout=4.0).chat.completions.create(model=DEPLOYMENT, messages=ask("[[sim:hang]] hi")))
        self.assertIsInstance(c.error, openai.InternalServerError, "timebox answered before the SDK gave up")
        self.assertEqual(c.error.code, "deadline_exceeded")
        self.assertEqual(len(c.upstream), 1)
        self.assertEqual([(l["clientTimeoutMs"], l["budgetMs"]) for l in c.log], [(4000, 2000)])

    def test_a_stream_runs_past_the_sdks_timeout_once_begun(self) -> None:
        # The read timeout bounds each wait for bytes, not the stream: with timeout=3.0 (the least counted), a stream
        # longer than that (10 ms a token) comes whole, within the 6 s budget, as it does from Azure itself.
        def run() -> tuple[str, float]:
            start, text = time.monotonic(), ""
            for chunk in self.sdk.with_options(timeout=3.0).chat.completions.create(
                model=DEPLOYMENT, messages=ask("Count to 100."), stream=True
            ):
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
            return text, time.monotonic() - start

        c = counted(run)
        self.assertIsNone(c.error)
        text, took = c.result
        self.assertEqual(text, ", ".join(str(i) for i in range(1, 101)) + ".")
        self.assertGreater(took, 3.0, "the stream outlasted the timeout")
        self.assertEqual(len(c.upstream), 1)

    def test_models_list_names_the_deployment(self) -> None:
        c = counted(lambda: [m.id for m in self.sdk.models.list()], upstream=0)
        self.assertIsNone(c.error)
        self.assertEqual(c.result, [DEPLOYMENT])
        self.assertEqual(c.upstream, [])
        self.assertEqual([l["status"] for l in c.log], [200])

    def test_a_model_this_service_does_not_serve_is_404_with_no_upstream_call(self) -> None:
        c = counted(lambda: self.sdk.chat.completions.create(model="gpt-9", messages=ask("hi")), upstream=0)
        self.assertIsInstance(c.error, openai.NotFoundError)
        self.assertEqual(c.error.code, "model_not_found")
        self.assertEqual(c.upstream, [])
        self.assertEqual(len(c.log), 1, "not retried")


class OpenAIClient(Surface, unittest.TestCase):
    """OpenAI(base_url='<app>/openai/v1', api_key=<a function giving the token>)."""

    route = "/openai/v1/chat/completions"
    name = "openai"

    def client(self, provider: Callable[[], str]) -> OpenAI:
        return OpenAI(base_url=f"{STACK.api}/openai/v1", api_key=provider)

    def test_the_token_itself_as_the_key(self) -> None:
        sdk = OpenAI(base_url=f"{STACK.api}/openai/v1", api_key=STACK.token())
        c = counted(lambda: sdk.chat.completions.create(model=DEPLOYMENT, messages=ask("Count to 3.")))
        self.assertEqual(c.result.choices[0].message.content, "1, 2, 3.")

    def test_an_unknown_parameter_is_refused_as_openai_refuses_it(self) -> None:
        c = counted(lambda: self.sdk.chat.completions.create(model=DEPLOYMENT, messages=ask("hi"), logprobs=True), upstream=0)
        self.assertIsInstance(c.error, openai.BadRequestError)
        self.assertEqual((c.error.code, c.error.param), ("unknown_parameter", "logprobs"))


class AzureClient(Surface, unittest.TestCase):
    """AzureOpenAI(azure_endpoint='<app>', azure_ad_token_provider=..., api_version=...): only the endpoint changes."""

    route = "/openai/deployments/{deployment}/chat/completions"
    name = "azure"

    def client(self, provider: Callable[[], str]) -> OpenAI:
        return AzureOpenAI(azure_endpoint=STACK.api, api_version="2024-10-21", azure_ad_token_provider=provider)

    def test_an_api_key_is_never_accepted_from_a_caller(self) -> None:
        sdk = AzureOpenAI(azure_endpoint=STACK.api, api_version="2024-10-21", api_key="an-azure-openai-key")
        c = counted(lambda: sdk.chat.completions.create(model=DEPLOYMENT, messages=ask("hi")), upstream=0)
        self.assertIsInstance(c.error, openai.AuthenticationError)
        self.assertEqual(c.error.code, "unauthenticated")
        self.assertEqual(len(c.log), 1, "not retried")
        self.assertEqual(c.upstream, [])


if __name__ == "__main__":
    unittest.main()
