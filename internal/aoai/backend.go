package aoai

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/timebox-dev/timebox/internal/modelfacts"
)

// Backend is one Azure OpenAI deployment of the pool (config.Backend).
type Backend struct {
	// Name is what logs, health and cursors say of it.
	Name string
	// Endpoint is the resource URL, e.g. https://contoso.openai.azure.com.
	Endpoint *url.URL
	// Deployment is the model deployment name in its resource.
	Deployment string
	// Model is the model the deployment runs, for its token-limit field;
	// empty: the deployment's name names it.
	Model string
	// Priority (1 first) and Weight (within a priority) choose it; 0
	// means 1.
	Priority, Weight int
	// APIVersion selects the deployments path with this api-version; empty
	// selects the v1 path (/openai/v1/chat/completions, deployment in
	// model).
	APIVersion string
	// APIKey selects api-key auth; when empty Options.Credential is used.
	APIKey string
}

// backend is a Backend ready to call: its own pipeline (its own
// credential policy) and URLs.
type backend struct {
	name       string
	index      int // in the pool
	priority   int
	weight     int
	pl         runtime.Pipeline
	cred       azcore.TokenCredential // signIn; nil with an API key
	url        string                 // chat completions
	path       string                 // url's path, which a 404's error names
	root       string                 // the resource's root URL, for the Responses API
	deployment string
	v1         bool
	tokenField string
}

// newBackend builds o's pipeline: its key, or the shared credential, over
// the shared transport, with azcore's own retries off.
func newBackend(o Backend, cred azcore.TokenCredential, transport policy.Transporter) (*backend, error) {
	if o.Endpoint == nil || o.Deployment == "" {
		return nil, errors.New("aoai: endpoint and deployment are required")
	}
	// Credentials over http are refused by azcore unless allowed; allow them
	// only for a loopback endpoint (the simulator), as config also insists.
	insecure := o.Endpoint.Scheme == "http"
	var auth policy.Policy
	switch {
	case o.APIKey != "":
		auth = runtime.NewKeyCredentialPolicy(azcore.NewKeyCredential(o.APIKey), "api-key",
			&runtime.KeyCredentialPolicyOptions{InsecureAllowCredentialWithHTTP: insecure})
		cred = nil
	case cred != nil:
		cred = signIn{cred}
		auth = runtime.NewBearerTokenPolicy(cred, []string{Scope},
			&policy.BearerTokenOptions{InsecureAllowCredentialWithHTTP: insecure})
	default:
		return nil, errors.New("aoai: an API key or a credential is required")
	}
	// azcore's telemetry policy sets the User-Agent (azsdk-go-timebox/v1
	// (<go version>; <os>)), by which Azure's logs tell timebox's requests
	// from others'.
	pl := runtime.NewPipeline("timebox", "v1", runtime.PipelineOptions{PerRetry: []policy.Policy{auth, attemptHeaders{}}},
		&policy.ClientOptions{
			Transport: transport,
			// One layer of retries: ours (the pool's attempt loop). azcore
			// would otherwise retry 429 and 5xx three times on its own,
			// multiplying slow failures.
			Retry: policy.RetryOptions{MaxRetries: -1},
		})

	base := strings.TrimRight(o.Endpoint.String(), "/")
	u := base + "/openai/v1/chat/completions"
	if o.APIVersion != "" {
		u = base + "/openai/deployments/" + url.PathEscape(o.Deployment) + "/chat/completions?api-version=" + url.QueryEscape(o.APIVersion)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("aoai: endpoint: %w", err)
	}
	return &backend{
		name:       cmp.Or(o.Name, DefaultBackend),
		priority:   cmp.Or(o.Priority, 1),
		weight:     cmp.Or(o.Weight, 1),
		pl:         pl,
		cred:       cred,
		url:        u,
		path:       parsed.Path,
		root:       base,
		deployment: o.Deployment,
		v1:         o.APIVersion == "",
		tokenField: modelfacts.Lookup(cmp.Or(o.Model, o.Deployment)).TokenField,
	}, nil
}

// DefaultBackend is the name of a pool of one that Options gives as its
// single Endpoint (config.DefaultBackend).
const DefaultBackend = "default"
