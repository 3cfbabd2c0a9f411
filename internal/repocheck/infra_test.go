package repocheck

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Bicep compiler cannot be installed on the build machine, so the
// deployment template (azure.yaml, infra/) is checked here as text, for what
// matters: it sets every setting the handler reads from a parameter and no
// unknown one, it grants the right built-in roles on the right resources,
// it holds no key, and it deploys what `make package` builds.

// notSetByTheTemplate are the handler's settings a deployment leaves alone,
// each with the reason. Names starting WEBSITE_ are App Service's own.
var notSetByTheTemplate = map[string]string{
	"FUNCTIONS_CUSTOMHANDLER_PORT": "the Functions host sets it for each start",
	"IDENTITY_ENDPOINT":            "App Service sets it where a managed identity exists",
	"AZURE_OPENAI_API_KEY":         "a deployment uses its managed identity, never a key",
}

// hostSettings are the settings of the Functions host itself that a Flex
// Consumption app with identity-based storage and Application Insights needs.
var hostSettings = []string{
	"AzureWebJobsStorage__credential",
	"AzureWebJobsStorage__clientId",
	"AzureWebJobsStorage__blobServiceUri",
	"APPLICATIONINSIGHTS_CONNECTION_STRING",
	"APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
}

// builtInRoles are the Azure built-in role definition ids the template may
// assign (Learn, "Azure built-in roles"), and the resource type each must be
// assigned on.
var builtInRoles = map[string]struct{ name, scopeType string }{
	"b7e6dc6d-f1e8-4753-8033-0f276bb0955b": {"Storage Blob Data Owner", "Microsoft.Storage/storageAccounts"},
	"5e0bd9bd-7b93-4f28-af87-19fc36ad61bd": {"Cognitive Services OpenAI User", "Microsoft.CognitiveServices/accounts"},
	"3913510d-42f4-4e42-8a64-420c390055eb": {"Monitoring Metrics Publisher", "Microsoft.Insights/components"},
	"0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3": {"Storage Table Data Contributor", "Microsoft.Storage/storageAccounts/tableServices/tables"},
}

func TestTemplateSetsEveryHandlerSettingFromAParameter(t *testing.T) {
	root := repoRoot(t)
	read := handlerSettings(t, root)
	api := readFile(t, root, "infra/app/api.bicep")
	set := bicepObject(t, api, "handlerSettings")
	params := bicepParams(api)

	for _, name := range sortedKeys(read) {
		if _, skip := notSetByTheTemplate[name]; skip || strings.HasPrefix(name, "WEBSITE_") {
			if _, ok := set[name]; ok {
				t.Errorf("infra/app/api.bicep sets %s, which a deployment must leave alone (%s)", name, notSetByTheTemplate[name])
			}
			continue
		}
		value, ok := set[name]
		if !ok {
			t.Errorf("the handler reads %s (%s) but infra/app/api.bicep's handlerSettings does not set it", name, read[name])
			continue
		}
		assert.Contains(t, params, value, "%s is set from %q, which is not a parameter of infra/app/api.bicep", name, value)
	}
	for _, name := range sortedKeys(set) {
		if _, ok := read[name]; !ok {
			t.Errorf("infra/app/api.bicep sets %s, which the handler never reads", name)
		}
	}

	host := bicepObject(t, api, "hostSettings")
	assert.ElementsMatch(t, hostSettings, sortedKeys(host), "the Functions host's own settings")
	assert.Contains(t, api, "union(handlerSettings, hostSettings)", "both sets become the app settings")
}

// TestTemplateFollowsTheFlexConsumptionContract checks the parts of the
// template the platform facts of docs/platform.md depend on.
func TestTemplateFollowsTheFlexConsumptionContract(t *testing.T) {
	root := repoRoot(t)
	api := readFile(t, root, "infra/app/api.bicep")
	main := readFile(t, root, "infra/main.bicep")

	assert.Contains(t, api, "name: 'FC1'", "Flex Consumption plan")
	assert.Contains(t, api, "tier: 'FlexConsumption'")
	assert.Contains(t, api, "reserved: true", "Linux")
	assert.Regexp(t, `runtime: \{\s*name: 'custom'\s*version: '1\.0'\s*\}`, api, "the custom handler runtime of Flex Consumption")
	assert.Regexp(t, `authentication: \{\s*type: 'UserAssignedIdentity'`, api, "deployment storage read by the managed identity")

	// Per-instance concurrency comes from host.json, the one place it is decided.
	var hostJSON struct {
		Extensions struct {
			HTTP struct {
				MaxConcurrentRequests int `json:"maxConcurrentRequests"`
			} `json:"http"`
		} `json:"extensions"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, root, "host.json")), &hostJSON))
	require.Positive(t, hostJSON.Extensions.HTTP.MaxConcurrentRequests, "host.json sets extensions.http.maxConcurrentRequests")
	assert.Contains(t, main, "loadJsonContent('../host.json')")
	assert.Contains(t, main, "perInstanceConcurrency = hostJson.extensions.http.maxConcurrentRequests")
	assert.Contains(t, main, "perInstanceConcurrency: perInstanceConcurrency")
	assert.Regexp(t, `http: \{\s*perInstanceConcurrency: perInstanceConcurrency\s*\}`, api)

	// Platform CORS lists the same origins as the handler.
	set := bicepObject(t, api, "handlerSettings")
	assert.Contains(t, api, "allowedOrigins: split("+set["ALLOWED_ORIGINS"]+", ',')", "platform CORS from the same parameter as ALLOWED_ORIGINS")

	// The client id of the user-assigned identity, for azidentity.
	assert.Equal(t, "identityClientId", set["AZURE_CLIENT_ID"])
	assert.Regexp(t, `type: 'UserAssigned'`, api)

	// The outputs a deployment ends with.
	for _, out := range []string{"SERVICE_API_URI", "WEB_PART_BASE_URL", "ALLOWED_ORIGINS", "AZURE_CLIENT_ID"} {
		assert.Regexp(t, `(?m)^output `+out+` string = `, main)
	}
}

func TestTemplateGrantsTheRightRoles(t *testing.T) {
	root := repoRoot(t)
	type grant struct{ role, scopeType string }
	var grants []grant
	for _, f := range bicepFiles(t, root) {
		text := readFile(t, root, f)
		resources := bicepResourceTypes(text)
		vars := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^var (\w+) = '([0-9a-f-]{36})'`).FindAllStringSubmatch(text, -1) {
			vars[m[1]] = m[2]
		}
		for _, block := range bicepBlocks(text, "Microsoft.Authorization/roleAssignments") {
			scope := regexp.MustCompile(`(?m)^\s*scope: (\w+)`).FindStringSubmatch(block)
			role := regexp.MustCompile(`roleDefinitions', (\w+|'[0-9a-f-]{36}')\)`).FindStringSubmatch(block)
			require.NotNil(t, scope, "%s: a role assignment without a scope", f)
			require.NotNil(t, role, "%s: a role assignment without a built-in role definition", f)
			id := strings.Trim(role[1], "'")
			if v, ok := vars[id]; ok {
				id = v
			}
			known, ok := builtInRoles[id]
			if !assert.True(t, ok, "%s assigns role %s, which is none of the built-in roles the template may grant", f, id) {
				continue
			}
			assert.Equal(t, known.scopeType, resources[scope[1]], "%s: %s is assigned on %s", f, known.name, scope[1])
			assert.Contains(t, block, "principalType: 'ServicePrincipal'", "%s: %s goes to the managed identity", f, known.name)
			grants = append(grants, grant{known.name, resources[scope[1]]})
		}
	}
	for _, want := range builtInRoles {
		assert.Contains(t, grants, grant{want.name, want.scopeType}, "the template grants %s", want.name)
	}
}

// TestNoKeysInTheRepository fails on anything that looks like a key, a
// connection string carrying one, or a way to fetch one, in any file; and,
// in the deployment files, on any key setting, secure parameter or stored
// CI secret: the deployment runs on identities alone.
func TestNoKeysInTheRepository(t *testing.T) {
	root := repoRoot(t)
	anywhere := regexp.MustCompile(`(?i)AccountKey=|SharedAccessKey=|SharedAccessSignature=|DefaultEndpointsProtocol=|listKeys\(|-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	deployment := regexp.MustCompile(`(?i)AZURE_OPENAI_API_KEY|api-?key|@secure|secrets\.|client-?secret|password|primaryKey|secondaryKey|AzureWebJobsStorage'?:|AzureWebJobsStorage"`)
	for _, f := range projectFiles(t, root) {
		text, ok := readText(t, root, f)
		if !ok || strings.HasPrefix(f, "internal/repocheck/") {
			continue
		}
		// The cursor key is no credential to anything: a MAC key the
		// deployment generates (azd) and only the handler reads, passed as
		// secure parameters so that no deployment's history shows it.
		text = cursorKeyParams.ReplaceAllString(text, "")
		for _, m := range anywhere.FindAllString(text, -1) {
			t.Errorf("%s holds %q: no key, and no way to fetch one, belongs in the repository", f, m)
		}
		if isDeploymentFile(f) {
			for _, m := range deployment.FindAllString(text, -1) {
				t.Errorf("%s holds %q: the deployment runs on managed identities and OIDC alone", f, m)
			}
		}
	}
	assert.Contains(t, readFile(t, root, "infra/app/storage.bicep"), "allowSharedKeyAccess: false")
	assert.Contains(t, readFile(t, root, "infra/app/openai.bicep"), "disableLocalAuth: true")
	assert.Contains(t, readFile(t, root, "infra/app/monitoring.bicep"), "DisableLocalAuth: true")
}

// cursorKeyParams are the secure parameters the cursor key passes in
// (infra/main.bicep, infra/app/api.bicep), the only ones the template has.
var cursorKeyParams = regexp.MustCompile(`@secure\(\)\n@description\('[^']*'\)\n(@metadata\(.*\)\n)?param (cursorKey|cursorKeyPrevious|cursorKeys) string`)

func isDeploymentFile(f string) bool {
	return f == "azure.yaml" || strings.HasPrefix(f, "infra/") || strings.HasPrefix(f, ".github/")
}

func TestAzureYamlDeploysWhatMakePackageBuilds(t *testing.T) {
	root := repoRoot(t)
	yaml := readFile(t, root, "azure.yaml")
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^    ` + name + `: (\S+)`).FindStringSubmatch(yaml)
		require.NotNil(t, m, "azure.yaml: services.api.%s", name)
		return m[1]
	}
	assert.Regexp(t, `(?m)^services:\n  api:\n`, yaml, "one service, api (the azd-service-name tag of infra/app/api.bicep)")
	assert.Contains(t, readFile(t, root, "infra/app/api.bicep"), "'azd-service-name': 'api'")
	assert.Equal(t, "function", field("host"))
	assert.Equal(t, "custom", field("language"), "azd takes the package as built, and builds nothing itself")
	assert.Equal(t, ".", field("project"))
	assert.Regexp(t, `(?m)^\s+prepackage:\n(\s+\w+:\n\s+shell: \w+\n\s+run: make package\n){2}`, yaml, "azd runs make package first, on every OS")

	makefile := readFile(t, root, "Makefile")
	dist := regexp.MustCompile(`(?m)^DIST \?= (\S+)$`).FindStringSubmatch(makefile)
	require.NotNil(t, dist, "the Makefile names its staging folder DIST")
	assert.Equal(t, dist[1], field("dist"), "azure.yaml deploys the folder make package stages")
}

// handlerSettings are the settings read by the Go code linked into the
// handler binary, mapped to a file that reads each.
func handlerSettings(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range handlerPackageDirs(t, root) {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			rel, err := filepath.Rel(root, filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			for _, name := range goSettings(t, root, filepath.ToSlash(rel)) {
				out[name] = filepath.ToSlash(rel)
			}
		}
	}
	require.Contains(t, out, "AZURE_OPENAI_ENDPOINT")
	return out
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	text, ok := readText(t, root, rel)
	require.True(t, ok, "%s is text", rel)
	return text
}

func bicepFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, f := range projectFiles(t, root) {
		if strings.HasPrefix(f, "infra/") && path.Ext(f) == ".bicep" {
			out = append(out, f)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// bicepObject returns the keys of `var <name> = { ... }` and the expression
// each is set to.
func bicepObject(t *testing.T, text, name string) map[string]string {
	t.Helper()
	start := strings.Index(text, "var "+name+" = {\n")
	require.NotEqual(t, -1, start, "no var %s object", name)
	body := text[start+len("var "+name+" = {\n"):]
	end := strings.Index(body, "\n}")
	require.NotEqual(t, -1, end)
	out := map[string]string{}
	for _, line := range strings.Split(body[:end], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		key, value, ok := strings.Cut(line, ": ")
		require.True(t, ok, "%s: %q is not key: value", name, line)
		out[key] = value
	}
	return out
}

func bicepParams(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^param (\w+) `).FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// bicepResourceTypes maps each resource symbol of a file to its type.
func bicepResourceTypes(text string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^resource (\w+) '([^@']+)@`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// bicepBlocks returns the top-level resource blocks of the given type.
func bicepBlocks(text, resourceType string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "resource ") || !strings.Contains(lines[i], "'"+resourceType+"@") {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "}" {
			j++
		}
		out = append(out, strings.Join(lines[i:min(j+1, len(lines))], "\n"))
		i = j
	}
	return out
}

// TestWorkflowsForForks: one workflow runs the README's test command, the
// other deploys with azd signed in by OpenID Connect federation, so no
// secret needs storing (TestNoKeysInTheRepository refuses any).
func TestWorkflowsForForks(t *testing.T) {
	root := repoRoot(t)
	test := readFile(t, root, ".github/workflows/test.yml")
	assert.Regexp(t, `(?m)^\s+run: make test$`, test)
	assert.Regexp(t, `(?m)^  (push|pull_request):`, test, "runs on pushes and pull requests")

	deploy := readFile(t, root, ".github/workflows/deploy.yml")
	assert.Regexp(t, `(?m)^\s+id-token: write`, deploy, "may ask GitHub for the OIDC token")
	assert.Regexp(t, `azd auth login --client-id "\$AZURE_CLIENT_ID" --federated-credential-provider github --tenant-id "\$AZURE_TENANT_ID"`, deploy)
	assert.Regexp(t, `(?m)^\s+AZURE_CLIENT_ID: \$\{\{ vars\.AZURE_CLIENT_ID \}\}`, deploy, "ids come from repository variables")
	assert.Regexp(t, `(?m)^\s+run: azd provision --no-prompt$`, deploy)
	assert.Regexp(t, `(?m)^\s+run: azd deploy --no-prompt$`, deploy)
	assert.Regexp(t, `(?m)^\s+run: go run \./cmd/timebox health `, deploy, "checks the deployment through the front end")
	assert.NotContains(t, readFile(t, root, ".ci/run"), ".github", "CI does not depend on the GitHub workflows")

	// A parameter with no default (`${NAME}`, not `${NAME=...}`) stops
	// `azd provision --no-prompt` unless the run's environment has it: the
	// workflow takes each from a repository variable, and deploy.md names it.
	params := readFile(t, root, "infra/main.parameters.json")
	guide := readFile(t, root, "docs/deploy.md")
	for _, m := range regexp.MustCompile(`"\$\{([A-Z0-9_]+)\}"`).FindAllStringSubmatch(params, -1) {
		name := m[1]
		assert.Regexp(t, `(?m)^\s+`+name+`: \$\{\{ vars\.`+name+` \}\}$`, deploy,
			"infra/main.parameters.json requires %s, which deploy.yml's environment does not set from a repository variable", name)
		assert.True(t, strings.Contains(guide, "`"+name+"`"), "docs/deploy.md does not name %s, a repository variable the deploy workflow needs", name)
	}
}

// TestLocalSettingsExampleListsEverySetting: `func start` reads the
// handler's settings from local.settings.json, so the example names every
// one a developer may set (the ones the platform sets are left out), and
// the two the local host itself needs.
func TestLocalSettingsExampleListsEverySetting(t *testing.T) {
	root := repoRoot(t)
	var example struct {
		Values map[string]string `json:"Values"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, root, "local.settings.json.example")), &example))
	want := []string{"FUNCTIONS_WORKER_RUNTIME", "AzureWebJobsStorage"}
	for name := range handlerSettings(t, root) {
		if name != "FUNCTIONS_CUSTOMHANDLER_PORT" && name != "IDENTITY_ENDPOINT" && !strings.HasPrefix(name, "WEBSITE_") {
			want = append(want, name)
		}
	}
	assert.ElementsMatch(t, want, sortedKeys(example.Values), "the Values of local.settings.json.example")
	assert.Equal(t, "custom", example.Values["FUNCTIONS_WORKER_RUNTIME"])
}

// deploymentDefaults are the settings whose deployment default differs from
// the handler's on purpose, each with the reason deploy.md gives.
var deploymentDefaults = map[string]string{
	"AUTH_MODE": "entra: a deployment checks its callers (the handler refuses none inside Azure)",
}

// TestTemplateDefaultsAreTheHandlersDefaults: infra/main.parameters.json
// writes each setting's default for azd (`${NAME=default}`); where
// docs/operations.md documents a literal default, the two agree, so that a
// deployment behaves as the docs say unless deploy.md says otherwise.
func TestTemplateDefaultsAreTheHandlersDefaults(t *testing.T) {
	root := repoRoot(t)
	params := readFile(t, root, "infra/main.parameters.json")
	documented := documentedDefaults(t, root)
	n := 0
	for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)=([^}]*)\}`).FindAllStringSubmatch(params, -1) {
		name, value := m[1], m[2]
		want, ok := documented[name]
		if !ok {
			continue
		}
		n++
		if reason, differs := deploymentDefaults[name]; differs {
			assert.NotEqual(t, want, value, "%s: the template's default is the handler's again; drop it from deploymentDefaults (%s)", name, reason)
			continue
		}
		assert.Equal(t, want, value, "infra/main.parameters.json's default for %s is not docs/operations.md's", name)
	}
	assert.Greater(t, n, 5, "the template writes the defaults of the handler's settings")
}

// TestTemplateTakesAPool: with openAiBackends, every account of the pool
// gets the role (one openai-access.bicep per entry, new or existing), the
// handler's AZURE_OPENAI_BACKENDS is built from the entries and the
// endpoints the role modules resolve, never a key, and the single
// account's modules stand aside.
func TestTemplateTakesAPool(t *testing.T) {
	root := repoRoot(t)
	main := readFile(t, root, "infra/main.bicep")
	api := readFile(t, root, "infra/app/api.bicep")
	openai := readFile(t, root, "infra/app/openai.bicep")

	assert.Regexp(t, `(?m)^param openAiBackends array = \[\]$`, main, "the pool is a list, empty by default")
	assert.Contains(t, main, "var usePool = !empty(openAiBackends)")
	assert.Regexp(t, `module poolAccess 'app/openai-access.bicep' = \[for \(b, i\) in openAiBackends: \{\n\s+name: 'openai-access-\$\{i\}'\n\s+scope: resourceGroup\(poolGroupNames\[i\]\)`,
		main, "the role on every account of the pool, in its own group")
	assert.Contains(t, main, "accountName: poolAccountNames[i]")
	assert.Regexp(t, `module poolOpenAi 'app/openai.bicep' = \[for \(b, i\) in openAiBackends: if \(b\.\?create \?\? false\) \{`, main,
		"a new account only for the entries that ask for one")
	assert.Contains(t, main, "dependsOn: [rg, poolOpenAi]", "the role waits for a new account")
	assert.Contains(t, main, "module newOpenAi 'app/openai.bicep' = if (!useExistingOpenAi && !usePool) {")
	assert.Contains(t, main, "module openAiAccess 'app/openai-access.bicep' = if (!usePool) {")
	assert.Contains(t, main, "openAiEndpoint: usePool ? '' : openAiAccess.outputs.endpoint", "AZURE_OPENAI_ENDPOINT is refused beside the pool")
	assert.Contains(t, main, "openAiApiVersion: usePool ? '' : openAiApiVersion", "AZURE_OPENAI_API_VERSION is refused beside the pool")
	assert.Contains(t, main, "dependsOn: [rbac, openAiAccess, poolAccess]", "the app starts once its roles are granted")

	start := strings.Index(main, "openAiBackendList: [for (b, i) in openAiBackends: {")
	require.NotEqual(t, -1, start, "the api module is given the pool")
	list := main[start : start+strings.Index(main[start:], "}]")]
	for _, field := range []string{"name: b.name", "endpoint: poolAccess[i].outputs.endpoint", "deployment: b.deploymentName",
		"model:", "priority:", "weight:", "apiVersion:"} {
		assert.Contains(t, list, field, "AZURE_OPENAI_BACKENDS's entries")
	}
	assert.NotContains(t, strings.ToLower(list), "key", "no key, and no key setting: the identity signs in everywhere")

	assert.Contains(t, api, "param openAiBackends string = empty(openAiBackendList) ? '' : string(openAiBackendList)",
		"AZURE_OPENAI_BACKENDS is the list as JSON, empty without a pool")
	assert.Contains(t, openai, "param skuName string = 'GlobalStandard'", "a new deployment may be provisioned (PTU)")
	assert.Contains(t, openai, "name: skuName")
}

// TestTemplateCreatesTheAlertsTheDocsName: the template creates the three
// alert rules docs/operations.md lists ("Alerts"), on the workspace the
// app's telemetry goes to, each with the query the docs print, and azd up
// takes ALERT_EMAIL for them.
func TestTemplateCreatesTheAlertsTheDocsName(t *testing.T) {
	root := repoRoot(t)
	alerts := readFile(t, root, "infra/app/alerts.bicep")
	ops := readFile(t, root, "docs/operations.md")
	_, section, ok := strings.Cut(ops, "\n### Alerts\n")
	require.True(t, ok, "docs/operations.md has an Alerts section")
	section, _, _ = strings.Cut(section, "\n## ")
	section = strings.ReplaceAll(section, `\|`, "|") // a table cell escapes the query's pipe
	assert.Contains(t, alerts, "Microsoft.Insights/scheduledQueryRules@")
	assert.Contains(t, alerts, "scopes: [logAnalyticsId]")
	queries := regexp.MustCompile(`(?m)^    name: '([a-z-]+)'\n(?:.*\n){2}    query: '(.*)'$`).FindAllStringSubmatch(alerts, -1)
	names := []string{}
	for _, q := range queries {
		names = append(names, q[1])
		query := strings.ReplaceAll(q[2], `\'`, `'`)
		assert.Contains(t, section, "`"+q[1]+"`", "the docs name the alert %s", q[1])
		assert.Contains(t, section, query, "the docs print the query alert %s fires on", q[1])
	}
	assert.Equal(t, []string{"deadline-answers", "quota-store-unavailable", "upstream-auth-failing"}, names)
	assert.Contains(t, readFile(t, root, "infra/main.bicep"), "module alerts 'app/alerts.bicep'")
	assert.Contains(t, readFile(t, root, "infra/main.parameters.json"), `"alertEmail": { "value": "${ALERT_EMAIL=}" }`)
}
