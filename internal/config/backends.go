package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/timebox-dev/timebox/internal/modelfacts"
)

// Backend is one Azure OpenAI deployment of the pool timebox routes across
// (AZURE_OPENAI_BACKENDS, one entry of its JSON array; without it, the pool
// of one that AZURE_OPENAI_ENDPOINT and its siblings describe).
type Backend struct {
	// Name is what logs, health, cursors and the quota ledger say of the
	// backend, never its URL: [a-z0-9-]{1,32}, unique in the pool.
	// DefaultBackend for the pool of one.
	Name string
	// Endpoint is the resource's root URL, checked as AZURE_OPENAI_ENDPOINT.
	Endpoint *url.URL
	// Deployment is the deployment's name in its resource.
	Deployment string
	// Model is what the deployment runs: its facts (token field, window,
	// tokenizer); unset, the deployment's name.
	Model string
	// Priority orders the pool: 1 is tried first; a backend of a higher
	// number takes calls only while every lower one is cooling or out.
	Priority int
	// Weight shares the calls among the backends of one priority.
	Weight int
	// APIVersion selects the deployments path with this api-version; empty
	// means the v1 path.
	APIVersion string
	// APIKeySetting names the setting that holds the backend's key; empty
	// means Entra ID (the app's identity).
	APIKeySetting string
	// APIKey is that setting's value. Never logged.
	APIKey string `json:"-"`
}

// DefaultBackend is the name of the pool of one (AZURE_OPENAI_ENDPOINT).
const DefaultBackend = "default"

// DefaultBackendCooldownMax is BACKEND_COOLDOWN_MAX's default: Azure
// OpenAI's limits are per minute, so a minute clears any throttle it plans.
const DefaultBackendCooldownMax = time.Minute

// maxBackends bounds the pool: a pool is a handful of regions and
// deployment types, and every backend is a pipeline of its own.
const maxBackends = 16

var backendName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// backendEntry is one entry of AZURE_OPENAI_BACKENDS as written. Priority
// and Weight are pointers to tell a 0 written from one left out.
type backendEntry struct {
	Name          string `json:"name"`
	Endpoint      string `json:"endpoint"`
	Deployment    string `json:"deployment"`
	Model         string `json:"model"`
	Priority      *int   `json:"priority"`
	Weight        *int   `json:"weight"`
	APIVersion    string `json:"apiVersion"`
	APIKeySetting string `json:"apiKeySetting"`
}

// loadBackends reads AZURE_OPENAI_BACKENDS into c.Backends and checks each
// entry's every field, naming the entry and the field of each mistake. The
// pool replaces AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY and
// AZURE_OPENAI_API_VERSION, which are refused beside it; a key is never in
// the array itself, only the name of the setting that holds it.
func loadBackends(c *Config, v string, get func(string) string, bad func(name, format string, args ...any)) {
	const setting = "AZURE_OPENAI_BACKENDS"
	for _, other := range []string{"AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_API_VERSION"} {
		if get(other) != "" {
			bad(other, "must not be set with %s: each entry of the pool names its endpoint, apiVersion and apiKeySetting", setting)
		}
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	var entries []backendEntry
	if err := dec.Decode(&entries); err != nil {
		bad(setting, "is not a JSON array of backends (%s); each entry: {\"name\", \"endpoint\", \"deployment\", \"model\", "+
			"\"priority\", \"weight\", \"apiVersion\", \"apiKeySetting\"}, and a key never in the array itself", jsonProblem(err))
		return
	}
	if dec.More() {
		bad(setting, "has more after its array")
		return
	}
	switch {
	case len(entries) == 0:
		bad(setting, "names no backend")
		return
	case len(entries) > maxBackends:
		bad(setting, "names %d backends; at most %d", len(entries), maxBackends)
		return
	}
	seen := map[string]int{}
	deployments := map[string]string{}
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", setting, i)
		if e.Name != "" {
			at = fmt.Sprintf("%s[%d] (%s)", setting, i, e.Name)
		}
		field := func(f, format string, args ...any) { bad(at+"."+f, format, args...) }
		b := Backend{Name: e.Name, Deployment: strings.TrimSpace(e.Deployment), Model: strings.TrimSpace(e.Model),
			APIVersion: strings.TrimSpace(e.APIVersion), APIKeySetting: strings.TrimSpace(e.APIKeySetting), Priority: 1, Weight: 1}
		switch j, dup := seen[e.Name]; {
		case !backendName.MatchString(e.Name):
			field("name", "%q must be 1 to 32 of a-z, 0-9 and -: it is what logs, health and cursors say of the backend", e.Name)
		case dup:
			field("name", "%q is the name of entry %d too; names must be unique", e.Name, j)
		default:
			seen[e.Name] = i
		}
		if strings.TrimSpace(e.Endpoint) == "" {
			field("endpoint", "required (https://<resource>.openai.azure.com)")
		} else {
			b.Endpoint = endpoint(at+".endpoint", strings.TrimSpace(e.Endpoint), func(_, format string, args ...any) {
				field("endpoint", format, args...)
			}, &c.Warnings)
		}
		if deploymentProblem(b.Deployment) != "" {
			field("deployment", "%s", deploymentProblem(b.Deployment))
		}
		if b.Endpoint != nil && b.Deployment != "" {
			key := b.Endpoint.String() + " " + b.Deployment
			if other, ok := deployments[key]; ok {
				field("deployment", "%q at %s is entry %s's deployment too; list each deployment once", b.Deployment, b.Endpoint, other)
			}
			deployments[key] = fmt.Sprint(i)
		}
		b.Model = cmp.Or(b.Model, b.Deployment)
		if e.Priority != nil {
			if *e.Priority < 1 || *e.Priority > 100 {
				field("priority", "%d must be from 1 (tried first) to 100", *e.Priority)
			}
			b.Priority = *e.Priority
		}
		if e.Weight != nil {
			if *e.Weight < 1 || *e.Weight > 1000 {
				field("weight", "%d must be from 1 to 1000", *e.Weight)
			}
			b.Weight = *e.Weight
		}
		if b.APIKeySetting != "" {
			switch {
			case b.APIKeySetting == setting || !settingName.MatchString(b.APIKeySetting):
				field("apiKeySetting", "%q must name another setting (letters, digits, _) that holds the backend's key", b.APIKeySetting)
			case get(b.APIKeySetting) == "":
				field("apiKeySetting", "names %s, which is not set: set it to the backend's key, or leave apiKeySetting out to sign in with Entra ID",
					b.APIKeySetting)
			default:
				b.APIKey = get(b.APIKeySetting)
			}
		}
		c.Backends = append(c.Backends, b)
	}
}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// jsonProblem says what is wrong with the array without quoting the
// setting's text, which may hold what a key was mistakenly written as.
func jsonProblem(err error) string {
	var field *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &field):
		return fmt.Sprintf("%s must be a %s", cmp.Or(field.Field, "the value"), field.Type)
	case errors.As(err, &syntax):
		return fmt.Sprintf("JSON syntax error at byte %d", syntax.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if strings.Contains(strings.ToLower(name), "key") {
			return fmt.Sprintf("unknown field %s: a key never goes in the array; put it in a setting of its own and name that setting in apiKeySetting", name)
		}
		return "unknown field " + name
	}
	return "it does not parse"
}

// checkPoolModels refuses a pool whose models count tokens differently
// from the model callers name (the prompt is counted once, before a
// backend is chosen); it returns the smallest default context window of
// the pool, which the prompt must fit wherever it goes.
func checkPoolModels(c *Config, bad func(name, format string, args ...any)) int {
	public := modelfacts.Lookup(c.Model)
	window := 0
	for i, b := range c.Backends {
		facts := modelfacts.Lookup(b.Model)
		if facts.Encoding != public.Encoding {
			bad(fmt.Sprintf("AZURE_OPENAI_BACKENDS[%d] (%s).model", i, b.Name),
				"%q counts tokens with %s, the pool's model (%s) with %s: every backend must run a model that counts tokens the same way",
				b.Model, facts.Encoding, c.Model, public.Encoding)
		}
		w := facts.PromptWindow(c.MaxTokens) + c.MaxTokens
		if window == 0 || w < window {
			window = w
		}
	}
	return window
}

// deploymentProblem says what is wrong with a deployment's name; "" when
// nothing is.
func deploymentProblem(d string) string {
	switch {
	case d == "":
		return "required (the model deployment name)"
	case strings.ContainsAny(d, "/?#%"):
		return fmt.Sprintf("%q must not contain / ? # or %%", d)
	}
	return ""
}

// BackendNames are the pool's backends' names, in the order written.
func (c Config) BackendNames() []string {
	names := make([]string, len(c.Backends))
	for i, b := range c.Backends {
		names[i] = b.Name
	}
	return names
}
