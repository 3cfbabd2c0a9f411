package api_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// hugeRunDOCX is the upload: one <w:t> run of 60 MiB of one letter
// (under the 64 MiB expansion cap), a few hundred KB deflated, streamed
// through the compressor so the test never holds the 60 MiB.
func hugeRunDOCX(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	// The fastest level: the race detector makes the best one take seconds
	// over 60 MiB; the file is still a few hundred KB.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	w, err := zw.Create("word/document.xml")
	require.NoError(t, err)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 60 {
		_, _ = w.Write(chunk)
	}
	_, _ = io.WriteString(w, `</w:t></w:r></w:p></w:body></w:document>`)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// The first row through the real handler (the real extractor, the
// real tokenizer): the 60 MiB run is read up to the 2 MiB text cap, cut to
// fit the prompt, and answered. (Memory: internal/extract's
// TestHugeTokensBounded bounds the extraction, make hostile measures the
// process: 8 at once peak at 115 MB, against 4.4 GB before.)
func TestHugeTextRunDOCXThroughTheHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("counts 2 MiB of text")
	}
	data := hugeRunDOCX(t)
	require.Less(t, len(data), 1<<20)
	synctest.Test(t, func(t *testing.T) {
		// A small context window, so that the prompt counts a little of the
		// 2 MiB (counting all of it is make hostile's business).
		h := newHarness(t, map[string]string{"CONTEXT_WINDOW": "16000"}, aoaitest.Options{})
		body := chatWith("What does it say?", []doc{{Name: "run.docx", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: b64(data)}}, nil)
		w := h.do(chatRequest(body))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var resp struct{ Truncated bool }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
		assert.True(t, resp.Truncated, "the run was cut to fit")
	})
}
