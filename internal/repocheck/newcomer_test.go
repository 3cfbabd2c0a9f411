package repocheck

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/app"
	"github.com/timebox-dev/timebox/internal/config"
)

// What a newcomer types first: make help, plain make, make start on a
// machine without the Functions host.

var makeTarget = regexp.MustCompile(`(?m)^([a-z0-9-]+):`)

// makeTargets returns the Makefile's targets, in order.
func makeTargets(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, m := range makeTarget.FindAllStringSubmatch(readFile(t, root, "Makefile"), -1) {
		out = append(out, m[1])
	}
	return out
}

// make help lists every target with its comment, and says that plain make
// runs make run (the first target).
func TestMakeHelpListsEveryTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	root := repoRoot(t)
	targets := makeTargets(t, root)
	require.NotEmpty(t, targets)
	assert.Equal(t, "run", targets[0], "plain make runs the first target, which the README says is make run")
	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	help := string(out)
	assert.Contains(t, help, "make with no target runs make run")
	for _, target := range targets {
		assert.Regexp(t, `(?m)^  make `+regexp.QuoteMeta(target)+` +\S`, help, "make help lists %s with what it does", target)
	}
}

// make start without Azure Functions Core Tools says what it needs and how
// to get it (not "func: No such file or directory"), and what to use
// instead.
func TestMakeStartWithoutFuncSaysWhatToDo(t *testing.T) {
	root := repoRoot(t)
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	cat, err := exec.LookPath("cat")
	require.NoError(t, err)
	// A PATH with cat and nothing else: no func, whatever this machine has.
	bin := t.TempDir()
	require.NoError(t, os.Symlink(cat, filepath.Join(bin, "cat")))
	cmd := exec.Command(bash, "scripts/start.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "make start fails without func")
	msg := stderr.String()
	assert.Contains(t, msg, "Azure Functions Core Tools")
	assert.Contains(t, msg, "npm install -g azure-functions-core-tools@4")
	assert.Contains(t, msg, "make run")
	assert.NotContains(t, strings.ToLower(msg), "no such file")
}

// TestReadmeConsoleCommandsExist: every command in the README's console
// blocks (what a newcomer copies first) names what exists: a make target, a
// route the handler serves, a Go package, a subcommand and flags of the
// timebox CLI. A command of any other program fails here until this check
// learns it.
func TestReadmeConsoleCommandsExist(t *testing.T) {
	root := repoRoot(t)
	commands := consoleCommands(readFile(t, root, "README.md"))
	require.NotEmpty(t, commands, "the README has console examples")
	targets := makeTargets(t, root)
	handler := routeChecker(t)
	var cliFlags map[string][]string // built on first use
	for _, words := range commands {
		t.Run(strings.Join(words[:min(len(words), 3)], " "), func(t *testing.T) {
			switch words[0] {
			case "make":
				for _, w := range words[1:] {
					if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
						assert.Contains(t, targets, w, "make %s: no such target", w)
					}
				}
			case "curl":
				checkCurl(t, handler, words[1:])
			case "go":
				require.GreaterOrEqual(t, len(words), 3)
				pkg := words[len(words)-1]
				if words[1] == "run" {
					pkg = words[2]
				}
				require.True(t, strings.HasPrefix(pkg, "./"), "go %s names a package of this module: %v", words[1], words)
				assert.FileExists(t, filepath.Join(root, pkg, "main.go"), "go %s %s: no command there", words[1], pkg)
				if words[1] == "run" {
					if cliFlags == nil {
						cliFlags = timeboxFlags(t, root)
					}
					checkCLI(t, cliFlags, words[3:])
				}
			case "./timebox", "timebox":
				if cliFlags == nil {
					cliFlags = timeboxFlags(t, root)
				}
				checkCLI(t, cliFlags, words[1:])
			default:
				t.Errorf("the README's console blocks run %q, which this check does not know", words[0])
			}
		})
	}
}

// consoleCommands returns the commands of the ```console blocks of a
// Markdown text: the lines after "$ ", joined with their continuation lines
// (a line ending in a backslash), split into words as the shell would.
func consoleCommands(markdown string) [][]string {
	var (
		out     [][]string
		in      bool
		pending string
	)
	for _, line := range strings.Split(markdown, "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if pending != "" {
			pending += " " + strings.TrimSpace(line)
		} else if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			pending = cmd
		} else {
			continue
		}
		if strings.HasSuffix(pending, `\`) {
			pending = strings.TrimSuffix(pending, `\`)
			continue
		}
		out = append(out, shellWords(pending))
		pending = ""
	}
	return out
}

// shellWords splits a command line into words: blanks separate them, and
// single or double quotes keep blanks in one (no expansion is done).
func shellWords(s string) []string {
	var (
		words []string
		word  strings.Builder
		quote rune
		any   bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, any = r, true
		case r == ' ' || r == '\t':
			if any || word.Len() > 0 {
				words = append(words, word.String())
				word.Reset()
				any = false
			}
		default:
			word.WriteRune(r)
		}
	}
	if any || word.Len() > 0 {
		words = append(words, word.String())
	}
	return words
}

// routeChecker is the whole handler as app.New builds it, for asking
// whether it serves a method and path (its upstream is never reached: the
// requests it is sent have no body).
func routeChecker(t *testing.T) http.Handler {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:1", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_KEY": "k",
		}[k]
	})
	require.NoError(t, err)
	a, err := app.New(cfg, app.Seams{})
	require.NoError(t, err)
	return a.Handler
}

// checkCurl checks that the URL of a curl command is a route of the handler
// with the method curl would use.
func checkCurl(t *testing.T, h http.Handler, args []string) {
	t.Helper()
	method, target := http.MethodGet, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-X" || a == "--request":
			i++
			method = args[i]
		case a == "-d" || a == "--data" || a == "--data-raw" || a == "--data-binary":
			i++
			if method == http.MethodGet {
				method = http.MethodPost
			}
		case a == "-H" || a == "--header":
			i++
		case strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://"):
			target = a
		}
	}
	require.NotEmpty(t, target, "curl without a URL")
	u, err := url.Parse(target)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7071", u.Host, "the README's examples call make run's handler")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), method, u.RequestURI(), nil))
	assert.NotContains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, w.Code, "%s %s is not a route of the handler", method, u.Path)
}

// timeboxFlags builds the CLI and returns each subcommand's flags, as its
// --help lists them.
func timeboxFlags(t *testing.T, root string) map[string][]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "timebox")
	build := exec.Command("go", "build", "-o", bin, "./cmd/timebox")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	flags := map[string][]string{}
	for _, sub := range []string{"ask", "health"} {
		out, err := exec.Command(bin, sub, "--help").Output()
		require.NoError(t, err, "timebox %s --help exits 0", sub)
		for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
			flags[sub] = append(flags[sub], m[1])
		}
		require.NotEmpty(t, flags[sub], "timebox %s --help lists its flags", sub)
	}
	return flags
}

// checkCLI checks a timebox command line: a subcommand, and flags it has.
func checkCLI(t *testing.T, flags map[string][]string, args []string) {
	t.Helper()
	require.NotEmpty(t, args, "timebox without a subcommand")
	known, ok := flags[args[0]]
	require.True(t, ok, "timebox %s: no such subcommand", args[0])
	for _, a := range args[1:] {
		if a == "--" {
			return
		}
		if !strings.HasPrefix(a, "-") {
			continue // a word of the question, or a flag's value
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "help" && name != "h" {
			assert.Contains(t, known, name, "timebox %s has no flag --%s", args[0], name)
		}
	}
}

// TestUserDocsNameNoIssuesOrCommits: the README and the docs a user reads
// say things in their own words, not "issue 7" or `58244a0`, which a clone
// without this repository's tracker, a shallow clone or a zip cannot look
// up. (docs/architecture.md, the map for whoever changes the code, is
// not among them.)
func TestUserDocsNameNoIssuesOrCommits(t *testing.T) {
	root := repoRoot(t)
	docs := []string{"README.md", "client/README.md", "spfx/README.md", "demo/README.md", "e2e/README.md"}
	matches, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, m := range matches {
		if filepath.Base(m) != "architecture.md" {
			docs = append(docs, filepath.Join("docs", filepath.Base(m)))
		}
	}
	internal := regexp.MustCompile("\\b[Ii]ssues? #?[0-9]+\\b|`[0-9a-f]{7,40}`|build machine")
	for _, doc := range docs {
		text, ok := readText(t, root, doc)
		require.True(t, ok, doc)
		for i, line := range strings.Split(text, "\n") {
			if m := internal.FindString(line); m != "" {
				t.Errorf("%s:%d names %q: say what it was instead", doc, i+1, m)
			}
		}
	}
}

// make run against a real Azure OpenAI offers no simulator directive: a
// real deployment would read "[[sim:hang]]" as words of the question.
func TestMakeRunOffersDirectivesOnlyToTheSimulator(t *testing.T) {
	root := repoRoot(t)
	examples := func(upstream string) string {
		t.Helper()
		cmd := exec.Command("bash", "scripts/examples.sh", "http://127.0.0.1:7071/api", "7071", upstream)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "AZURE_OPENAI_ENDPOINT=https://contoso.openai.azure.com", "AZURE_OPENAI_DEPLOYMENT=gpt-4o-mini")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	real := examples("")
	assert.NotContains(t, real, "[[sim:")
	assert.Contains(t, real, "https://contoso.openai.azure.com")
	assert.Contains(t, real, "curl -s http://127.0.0.1:7071/api/health")
	assert.Contains(t, examples("simulator"), "[[sim:hang]]")
	assert.Contains(t, readFile(t, root, "scripts/run.sh"), `bash scripts/examples.sh "$API" "$PORT" "${SIMULATED:+simulator}"`,
		"make run says simulator only when it started the simulator as Azure OpenAI")
}
