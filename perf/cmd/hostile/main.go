// Command hostile is the driver of make hostile: it replays the memory rows
// of issue 7 against the real handler binary (and, with -before, an older
// build in the same run) and prints each row's answers, slowest answer,
// peak RSS (VmHWM) and the RSS left a few seconds after, next to the
// figures the issue measured before the fix. The upstream is the
// simulator, in process, on loopback. Then the rows of callers that stop
// reading (readers.go), against an upstream of 7 MB answers: what the log
// lines say, how long the requests held, the handler's CPU and memory, and
// the exit after a SIGTERM. Linux only (memory is read from /proc).
package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/timebox-dev/timebox/internal/aoaitest"
	"github.com/timebox-dev/timebox/perf/internal/proc"
)

// row is one probe of the issue's table.
type row struct {
	name     string
	issueNow string // what the issue measured before the fix
	clients  int
	body     func() []byte
}

func main() {
	handler := flag.String("handler", "bin/hostile/handler", "the handler binary")
	before := flag.String("before", "", "an older handler binary, measured in the same run (optional)")
	settle := flag.Duration("settle", 5*time.Second, "how long after the last answer the RSS left is read")
	only := flag.String("rows", "all", "which rows: all, memory (issue 7's) or readers (callers that stop reading)")
	flag.Parse()

	bins := []handlerBin{{"after", *handler}}
	if *before != "" {
		bins = append([]handlerBin{{"before", *before}}, bins...)
	}
	if *only != "readers" {
		runMemoryRows(bins, *settle)
	}
	if *only != "memory" {
		runReaderRows(bins, *settle)
	}
}

// handlerBin is one handler binary to measure, and its label in the tables.
type handlerBin struct{ label, path string }

func runMemoryRows(bins []handlerBin, settle time.Duration) {
	sim := httptest.NewServer(aoaitest.New(aoaitest.Options{APIKey: "hostile-key", Deployments: []string{"gpt-4o-mini"}}))
	defer sim.Close()
	rows := []row{
		{name: "8 concurrent DOCX uploads, one 60 MiB <w:t> run (61 KB compressed)", clients: 8, body: docxBody,
			issueNow: "peak 4.4 GB, 3 GB held minutes later; extract_timeout at 21-24 s"},
		{name: "16 concurrent maximum-size requests (5 text documents, 16 MiB body)", clients: 16, body: maxSizeBody,
			issueNow: "peak 1.27 GB; 500 after a 127k-token upstream call with 0.5 s left"},
	}
	fmt.Println("issue 7, memory rows: REQUEST_BUDGET=5s, FAST_FAILURE_THRESHOLD=2s, the simulator upstream")
	fmt.Println()
	fmt.Println("| probe | handler | answers | slowest | peak RSS | RSS after " + settle.String() + " | the issue measured |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		body := r.body()
		for _, b := range bins {
			res, err := measure(b.path, sim.URL, r.clients, body, settle)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s (%s): %v\n", r.name, b.label, err)
				os.Exit(1)
			}
			fmt.Printf("| %s | %s | %s | %.1f s | %d MB | %d MB | %s |\n", r.name, b.label, res.answers, res.slowest.Seconds(), res.peak>>20, res.after>>20, r.issueNow)
		}
	}
}

type result struct {
	answers     string
	slowest     time.Duration
	peak, after int64 // bytes
}

// measure starts a fresh handler (so VmHWM is this row's), sends body from
// clients at once, and reads the peak and the settled RSS.
func measure(bin, upstream string, clients int, body []byte, settle time.Duration) (result, error) {
	cmd, port, err := handlerCommand(bin, upstream, "warn")
	if err != nil {
		return result{}, err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopHandler(cmd, exited, 15*time.Second)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(base); err != nil {
		return result{}, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex
		codes   = map[string]int{}
		slowest time.Duration
		wg      sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}}
	for range clients {
		wg.Go(func() {
			start := time.Now()
			status := post(ctx, client, base, body)
			d := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			codes[status]++
			slowest = max(slowest, d)
		})
	}
	wg.Wait()
	peak, err := proc.Memory(cmd.Process.Pid, "VmHWM")
	if err != nil {
		return result{}, err
	}
	time.Sleep(settle) // a measurement, not a test: how much the process gives back
	after, err := proc.Memory(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return result{}, err
	}
	return result{answers: tally(codes), slowest: slowest, peak: peak, after: after}, nil
}

// post sends one chat request and names its answer: the status and, for an
// error, its code.
func post(ctx context.Context, c *http.Client, base string, body []byte) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "network error"
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &e)
	if e.Error.Code != "" {
		return fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code)
	}
	return strconv.Itoa(resp.StatusCode)
}

type document struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Data        string `json:"data"`
}

func chat(docs []document) []byte {
	b, _ := json.Marshal(map[string]any{
		"messages":  []map[string]string{{"role": "user", "content": "Summarize the documents."}},
		"documents": docs,
	})
	return b
}

// docxBody is the issue's file: a DOCX whose one text run is 60 MiB of one
// letter, streamed through the compressor (61 KB).
func docxBody() []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("word/document.xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 60 {
		w.Write(chunk)
	}
	io.WriteString(w, `</w:t></w:r></w:p></w:body></w:document>`)
	zw.Close()
	return chat([]document{{Name: "run.docx", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: base64.StdEncoding.EncodeToString(buf.Bytes())}})
}

// maxSizeBody is five plain-text documents of 2.4 MB of varied words: a
// body just under the 16 MiB limit once in base64, and, once extracted, as
// much text as the handler will count.
func maxSizeBody() []byte {
	words := strings.Fields("budget forecast figures quarter revenue travel policy approval manager report deadline contract " +
		"supplier invoice meeting summary project milestone risk review team customer service level agreement")
	var docs []document
	for d := range 5 {
		var b strings.Builder
		for i := 0; b.Len() < 2_400_000; i++ {
			b.WriteString(words[(i*7+d)%len(words)])
			b.WriteString(strconv.Itoa(i % 97))
			b.WriteByte(' ')
		}
		docs = append(docs, document{Name: fmt.Sprintf("doc%d.txt", d), ContentType: "text/plain", Data: base64.StdEncoding.EncodeToString([]byte(b.String()))})
	}
	return chat(docs)
}
