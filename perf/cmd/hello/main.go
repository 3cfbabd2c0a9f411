// Command hello is the cold-start floor of make perf: the smallest net/http
// server that answers the Functions host's readiness ping (GET / 200) on
// FUNCTIONS_CUSTOMHANDLER_PORT. Nothing else.
package main

import (
	"log"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("FUNCTIONS_CUSTOMHANDLER_PORT"), nil))
}
