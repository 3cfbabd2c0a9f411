"""The Python example of docs/openai-sdk.md, run as written against the real
handler and simulator: only its two lines that name a real deployment change,
the app's URL and azure.identity's token provider (the local issuer's token
instead), and each must be there as the page has it."""

from __future__ import annotations

import contextlib
import io
import re
import unittest

from stack import REPO, Stack

STACK: Stack


def setUpModule() -> None:
    global STACK
    STACK = Stack()


def tearDownModule() -> None:
    STACK.stop()


# The lines of the example that only a real deployment can run, and what stands in for them here.
STAND_INS = {
    "from azure.identity import DefaultAzureCredential, get_bearer_token_provider\n": "",
    'APP = "https://contoso-timebox.azurewebsites.net"\n': "APP = STACK.api\n",
    'token_provider = get_bearer_token_provider(DefaultAzureCredential(), "api://<client-id>/.default")\n': "token_provider = STACK.token\n",
}


def example() -> str:
    """The first python block under the page's Python heading."""
    page = (REPO / "docs" / "openai-sdk.md").read_text()
    section = page[page.index("## Python: openai and AzureOpenAI") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "docs/openai-sdk.md has a python block under its Python heading"
    return block.group(1)


def runnable(code: str) -> str:
    for line, stand_in in STAND_INS.items():
        assert code.count(line) == 1, f"the example has the line {line!r} once"
        code = code.replace(line, stand_in)
    return code


def run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/openai-sdk.md", "exec"), {"STACK": STACK})
    return out.getvalue()


class DocsExample(unittest.TestCase):
    def test_the_python_example_runs_as_written(self) -> None:
        mark = STACK.mark()
        out = run(runnable(example()))
        self.assertEqual(out, "1, 2, 3.\n1, 2, 3, 4, 5.")
        log, upstream = STACK.counted(mark, requests=2, upstream=2)
        self.assertEqual(
            [(l["route"], l["status"]) for l in log],
            [("/openai/deployments/{deployment}/chat/completions", 200), ("/openai/v1/chat/completions", 200)],
        )
        self.assertEqual(len(upstream), 2)

    def test_its_error_branch_prints_timeboxs_code(self) -> None:
        # The same example, its stream cut upstream after two tokens.
        code = runnable(example())
        question = '"content": "Count to 5."'
        self.assertEqual(code.count(question), 1)
        mark = STACK.mark()
        out = run(code.replace(question, '"content": "[[sim:reset tokens=2]] Count to 5."'))
        self.assertRegex(out, r"^1, 2, 3\.\n1,.*upstream_error ", out)
        _, upstream = STACK.counted(mark, requests=2, upstream=2)
        self.assertEqual(len(upstream), 2, "the cut stream was not retried")


if __name__ == "__main__":
    unittest.main()
