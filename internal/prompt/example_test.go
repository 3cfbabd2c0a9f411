package prompt_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/timebox-dev/timebox/internal/prompt"
	"github.com/timebox-dev/timebox/internal/tokens"
)

func ExampleFit() {
	c, err := tokens.ForModel("gpt-4o")
	if err != nil {
		panic(err)
	}
	in := prompt.Input{
		System: "Answer from the sources.",
		Messages: []tokens.Message{
			{Role: "user", Content: "Hello!"},
			{Role: "assistant", Content: "Hi. How can I help?"},
			{Role: "user", Content: "How did Q3 go?"},
		},
		Sources: []prompt.Source{
			{Kind: prompt.KindDocument, Title: "q3.docx", Text: "Revenue grew 12%."},
			{Kind: prompt.KindPage, URL: "https://example.com/blog", Text: strings.Repeat("Our blog has news. ", 40)},
		},
	}
	res, err := prompt.Fit(c, in, prompt.Limits{ContextWindow: 1100, MaxTokens: 1000})
	var tooLarge *prompt.TooLargeError
	if errors.As(err, &tooLarge) {
		fmt.Println(tooLarge) // answer 413 prompt_too_large with this message
		return
	}
	fmt.Println(res.Messages[0].Content)
	fmt.Println(res.PromptTokens, res.Truncated, res.Dropped.Turns, res.Dropped.Sources)

	_, err = prompt.Fit(c, in, prompt.Limits{ContextWindow: 1045, MaxTokens: 1000})
	fmt.Println(err)
	// Output:
	// Answer from the sources.
	//
	// Sources for this conversation follow, each between its BEGIN and END lines. Cite a source by its number, like [1].
	//
	// --- BEGIN SOURCE 1 (document): q3.docx ---
	// Revenue grew 12%.
	// --- END SOURCE 1 ---
	//
	// [... 1 passage omitted to fit the context window ...]
	//
	// [... 2 earlier turns omitted to fit the context window ...]
	//
	// 98 true 2 [https://example.com/blog]
	// This question is too long for the AI model: the prompt needs 48 tokens, and 45 fit after the room reserved for the answer. Shorten the question by about 3 tokens (~3 words).
}
