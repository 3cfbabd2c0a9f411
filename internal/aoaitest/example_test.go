package aoaitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/timebox-dev/timebox/internal/aoaitest"
)

// A test points its client at an httptest server running the simulator and
// scripts a fault with a directive in the prompt.
func ExampleNew() {
	sim := aoaitest.New(aoaitest.Options{Deployments: []string{"gpt-4o-mini"}, APIKey: "test-key"})
	srv := httptest.NewServer(sim)
	defer srv.Close()

	for _, prompt := range []string{
		"[[sim:status code=503 times=1 id=example]] Count to 3",
		"[[sim:status code=503 times=1 id=example]] Count to 3",
	} {
		body := `{"messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":50}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/openai/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini",`+body[1:]))
		req.Header.Set("api-key", "test-key")
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		fmt.Println(resp.StatusCode, strings.Contains(string(b), `"content":"1, 2, 3."`))
	}
	st := sim.Stats()
	fmt.Println(st.Requests, st.Completed)
	// Output:
	// 503 false
	// 200 true
	// 2 2
}
