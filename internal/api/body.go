package api

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// guardBody keeps a request body from tying up its connection. net/http,
// when a handler answers without reading the body (a 415, a 404, a 403, a
// 503 overloaded), reads what is left of it before sending the answer, so
// that the connection can serve the next request: a body that stalls after
// one byte would hold the answer back and the connection open for ever.
// So the read deadline of a request with a body is the request's budget;
// and when the handler answers before the body is in, the read is ended at
// once (endRead), so net/http's drain fails and the answer goes out at
// once, with Connection: close. The connection is then closed the way a
// careful server closes one whose peer is still sending (linger): a plain
// close with unread bytes makes the kernel send a reset, and a client still
// writing its body (a browser's upload, Go's http.Client) would report a
// network error instead of the answer it was sent.
func (s *server) guardBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, _ := r.Context().Deadline()
		body := watchBody(w, r, deadline)
		if body == nil {
			next.ServeHTTP(w, r)
			return
		}
		bw := &bodyWriter{ResponseWriter: w, body: body}
		next.ServeHTTP(bw, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
		if !bw.started {
			// Nothing was written: net/http's empty 200 is the answer.
			body.endRead()
		}
		if sent, _ := sendWhole(w); sent {
			body.linger(s.Lingering)
		}
	})
}

type bodyKey struct{}

// bodyFrom is the guarded body of ctx's request; nil when it has none.
func bodyFrom(ctx context.Context) *bodyConn {
	c, _ := ctx.Value(bodyKey{}).(*bodyConn)
	return c
}

// bodyWriter ends the connection's read of a body still unread when the
// answer starts (its status is written), before net/http decides on
// Connection: close.
type bodyWriter struct {
	http.ResponseWriter
	body    *bodyConn
	started bool
}

func (w *bodyWriter) WriteHeader(code int) {
	if !w.started {
		w.started = true
		w.body.endRead()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *bodyWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns net/http's writer (http.ResponseController).
func (w *bodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sendWhole hands an answer of known length (Content-Length set, as
// writeJSON does) to the connection now, rather than when the handler
// returns, and reports whether it did, or the error of a connection that
// did not take it. An answer of unknown length is left to net/http, which
// can then still give it a length or close it: a flush now would make it
// chunked.
func sendWhole(w http.ResponseWriter) (sent bool, err error) {
	if w.Header().Get("Content-Length") == "" {
		return false, nil
	}
	err = http.NewResponseController(w).Flush()
	return err == nil, err
}

// bodyConn is guardBody's hold on one request's body and connection.
type bodyConn struct {
	rc   *http.ResponseController
	body *watchedBody
	// awaitsContinue: the client asked for 100 Continue (Expect) before
	// it sends the body, so an unread body is never read (see endRead).
	awaitsContinue bool
}

// watchBody arms the bound for r, and returns nil for a request without a
// body (net/http is already reading the connection for the next request
// then, and a deadline would break that read).
func watchBody(w http.ResponseWriter, r *http.Request, deadline time.Time) *bodyConn {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	c := &bodyConn{rc: http.NewResponseController(w), body: &watchedBody{ReadCloser: r.Body},
		// net/http has already refused any other expectation (417), and
		// sends 100 Continue only to HTTP/1.1.
		awaitsContinue: r.Header.Get("Expect") != "" && r.ProtoAtLeast(1, 1)}
	// A ResponseWriter that cannot set it has no connection to stall.
	_ = c.rc.SetReadDeadline(deadline)
	r.Body = c.body
	return c
}

// endRead ends the connection's read now if the handler has answered before
// the body was in (see guardBody). What of an unread body net/http has already taken off the connection is
// read and dropped first, as net/http would before answering: a body that
// had all arrived (a small JSON body refused with 415, 404, 403, 400) leaves
// the connection open for the caller's next request (and linger leaves it
// to net/http); only a body still arriving makes it close.
func (c *bodyConn) endRead() {
	if !c.unread() {
		return
	}
	_ = c.rc.SetReadDeadline(time.Now())
	if c.awaitsContinue {
		// Reading would send the 100 Continue (this runs before net/http
		// has the status that stops it), inviting the upload this answer
		// refuses: the connection is closed instead, as net/http closes one
		// whose 100-continue body it never read.
		return
	}
	// The deadline has passed: only bytes already read off the socket come
	// back, up to net/http's own bound for draining a body.
	_, _ = io.CopyN(io.Discard, c.body, lingerReadLimit)
}

// How long a connection answered before its body was in is kept
// half-closed before it is closed (net/http's own delay for the same
// purpose, rstAvoidanceDelay: time for the client to read the answer before
// a reset can reach it), and how much of what the client still sends is
// read and dropped meanwhile (see linger): net/http's own bound on a body
// left unread (maxPostHandlerReadBytes), which endRead keeps too.
const (
	lingerFor       = 500 * time.Millisecond
	lingerReadLimit = 256 << 10
)

// linger closes the connection of a request answered before its body was
// in, once the answer has been sent and logged:
// it takes the connection from net/http, ends its writing side (the client
// reads the answer, then the end of the stream), reads and drops what the
// client still sends for lingerFor at most, and closes it. A connection
// net/http cannot hand over (HTTP/2) is left to net/http, which closes it.
// l counts it until it is closed (nil: not counted), so that shutdown can
// wait for it: http.Server.Shutdown no longer sees it once it is taken.
func (c *bodyConn) linger(l *Lingering) {
	if !c.unread() {
		return
	}
	// Counted before it is taken: Shutdown, which may return as soon as it
	// is, must find it counted.
	l.begin()
	defer l.end()
	conn, _, err := c.rc.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	deadline := time.Now().Add(lingerFor)
	_ = conn.SetReadDeadline(deadline)
	// What the client still sends is read and dropped, up to what net/http
	// reads of a body left unread (256 KB): the wait ends as soon as the
	// client closes. Past that bound the rest stays unread until the
	// deadline, so a client streaming a large body costs a wait, not the
	// work of reading it.
	if _, err := io.CopyN(io.Discard, conn, lingerReadLimit); err == nil {
		time.Sleep(time.Until(deadline))
	}
}

// Lingering counts the connections that linger (bodyConn.linger) until
// each is closed. net/http has handed them over, so http.Server.Shutdown
// neither sees nor waits for them: a process that exits while one lingers
// closes it with the client's bytes unread, and the client, still
// uploading, gets a reset instead of the answer it was sent. The handler's
// shutdown waits for them (Wait). The zero value is ready; a nil
// *Lingering counts nothing.
type Lingering struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while nobody waits
}

func (l *Lingering) begin() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
}

func (l *Lingering) end() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.n == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// Wait returns once no connection lingers, or when ctx ends (the
// shutdown's own limit). Each connection ends its lingering by its own
// deadline, lingerFor after its answer, so Wait takes at most that. Call
// it once the server has stopped taking requests (http.Server.Shutdown has
// returned): every connection that will linger is counted by then.
func (l *Lingering) Wait(ctx context.Context) {
	l.mu.Lock()
	if l.n == 0 {
		l.mu.Unlock()
		return
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle := l.idle
	l.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// unread reports whether the handler answered before the body was in.
func (c *bodyConn) unread() bool {
	return c != nil && !c.body.eof
}

// watchedBody notes when the body has been read to its end.
type watchedBody struct {
	io.ReadCloser
	eof bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}
