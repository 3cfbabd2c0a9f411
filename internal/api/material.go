package api

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/timebox-dev/timebox/internal/budget"
	"github.com/timebox-dev/timebox/internal/extract"
	"github.com/timebox-dev/timebox/internal/fetch"
	"github.com/timebox-dev/timebox/internal/prompt"
)

// Fetcher reads a web page; satisfied by *fetch.Fetcher. Errors are
// *fetch.Error.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string) (fetch.Page, error)
}

// Extractor turns a document into plain text; satisfied by
// extract.Extractor. Errors are *extract.Error.
type Extractor interface {
	Extract(ctx context.Context, d extract.Document) (extract.Result, error)
}

// maxConcurrentSteps bounds the fetches and extractions of one request that
// run at once: enough to overlap network waits, few enough not to let one
// request take the instance's two cores and all its sockets.
const maxConcurrentSteps = 4

// gather reads the documents and pages of a request, concurrently and each
// under a deadline of its own, and returns them as prompt sources in request
// order: documents, then pages. The first failure cancels the others, and
// gather returns only when every step has returned: no goroutine outlives
// the request.
func (s *server) gather(ctx context.Context, req ChatRequest) ([]prompt.Source, error) {
	n := len(req.Documents) + len(req.URLs)
	if n == 0 {
		return nil, nil
	}
	out := make([]prompt.Source, n)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentSteps)
	for i, d := range req.Documents {
		g.Go(func() error {
			res, err := s.extractStep(ctx, extract.Document{Name: d.Name, ContentType: d.ContentType, Data: d.Data})
			if err != nil {
				return err
			}
			out[i] = prompt.Source{Kind: prompt.KindDocument, Title: d.Name, Text: res.Text}
			return nil
		})
	}
	for j, u := range req.URLs {
		g.Go(func() error {
			page, err := s.fetchStep(ctx, u)
			if err != nil {
				return err
			}
			res, err := s.extractStep(ctx, extract.Document{Name: u, ContentType: page.ContentType, Data: page.Body})
			if err != nil {
				return err
			}
			out[len(req.Documents)+j] = prompt.Source{Kind: prompt.KindPage, URL: page.URL, Text: res.Text}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// fetchStep fetches one page under its own deadline: FETCH_TIMEOUT, or just
// before the request's deadline, whichever is first. This is the only timer
// on a fetch: the fetcher itself ends when its context does.
func (s *server) fetchStep(ctx context.Context, rawURL string) (fetch.Page, error) {
	// The step is named by the URL without its secrets: the name goes into
	// the answer and the log line.
	name := fetch.RedactString(rawURL)
	ctx, cancel := budget.Step(ctx, "fetch", name, s.FetchTimeout)
	defer cancel()
	page, err := s.Fetcher.Fetch(ctx, rawURL)
	return page, stepError(ctx, err)
}

// extractStep extracts one document under its own deadline.
func (s *server) extractStep(ctx context.Context, d extract.Document) (extract.Result, error) {
	ctx, cancel := budget.Step(ctx, "extract", d.Name, s.ExtractTimeout)
	defer cancel()
	res, err := s.Extractor.Extract(ctx, d)
	return res, stepError(ctx, err)
}

// stepError makes a step that ran out of time say so by name. Otherwise
// (a sibling failed first, or the request itself is gone) the error stands
// as it is, and the sibling's error or the request's own cause is reported.
func stepError(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if st, ok := budget.StepCause(ctx); ok {
		return fmt.Errorf("%w: %w", st, err)
	}
	return err
}
