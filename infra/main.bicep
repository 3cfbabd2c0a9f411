// timebox on Azure Functions Flex Consumption: the layout of the official azd Flex Consumption templates
// (Azure-Samples/functions-quickstart-*-azd): a resource group per azd environment, a user-assigned managed
// identity that does everything (deployment storage, host storage, Application Insights, Azure OpenAI), no
// keys anywhere. See docs/deploy.md.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; it seeds the unique names of every resource.')
param environmentName string

@minLength(1)
@description('Region of the Function App (one that offers Flex Consumption) and of a new Azure OpenAI account.')
@metadata({ azd: { type: 'location' } })
param location string

// ---- Azure OpenAI: an existing account, or a new one with a deployment --------------------------------------

@description('Name of an existing Azure OpenAI account to use. Empty: a new account and deployment are created.')
param openAiAccountName string = ''

@description('Resource group of the existing Azure OpenAI account (same subscription). Empty: this environment\'s group.')
param openAiResourceGroupName string = ''

@description('Model deployment to call (AZURE_OPENAI_DEPLOYMENT). Created when no existing account is given.')
param openAiDeploymentName string = 'gpt-4o-mini'

@description('Model of a new deployment.')
param openAiModelName string = 'gpt-4o-mini'

@description('Model version of a new deployment.')
param openAiModelVersion string = '2024-07-18'

@description('Capacity of a new deployment, in thousands of tokens per minute.')
param openAiCapacity int = 30

@description('AZURE_OPENAI_API_VERSION: empty for the v1 API path.')
param openAiApiVersion string = ''

// ---- Or a pool of Azure OpenAI deployments (AZURE_OPENAI_BACKENDS; docs/deploy.md, "A pool of deployments") --

@description('The pool the app routes across, in place of the single account above: one object per deployment, {name, accountName, resourceGroupName?, deploymentName, model?, priority?, weight?, apiVersion?} for an existing account, or {name, create: true, deploymentName, modelName, modelVersion, capacity, skuName?, location?, priority?, weight?} for a new account with that deployment. The app\'s identity gets Cognitive Services OpenAI User on every account. Empty: the single account above.')
param openAiBackends array = []

@description('BACKEND_COOLDOWN_MAX: the longest a throttled backend of the pool is skipped, whatever wait it named.')
param backendCooldownMax string = '60s'

// ---- Handler settings (docs/operations.md) ---------------------------------------------------------------------

@minLength(1)
@description('ALLOWED_ORIGINS: comma-separated origins of the pages that call the app, e.g. https://contoso.sharepoint.com. Also listed in platform CORS.')
param allowedOrigins string

@description('REQUEST_BUDGET: whole-request deadline, below the platform\'s 230 s.')
param requestBudget string = '200s'

@description('FAST_FAILURE_THRESHOLD: an upstream attempt that failed after this long is a timeout.')
param fastFailureThreshold string = '30s'

@description('CLIENT_TIMEOUT_MARGIN: taken off x-client-timeout-ms.')
param clientTimeoutMargin string = '2s'

@description('UPSTREAM_MAX_ATTEMPTS: the server\'s attempts at a throttled upstream call (1-5).')
param upstreamMaxAttempts string = '2'

@description('MAX_TOKENS: completion token limit.')
param maxTokens string = '1024'

@description('CONTEXT_WINDOW: tokens the model accepts; empty: by model.')
param contextWindow string = ''

@description('TOKENIZER: o200k_base or cl100k_base; empty: by model.')
param tokenizer string = ''

@description('DEPLOYMENT_TPM: the deployment\'s tokens-per-minute limit; empty: not checked before calling. Defaults to a new deployment\'s capacity.')
param deploymentTpm string = ''

@description('FETCH_TIMEOUT: each page fetch\'s own deadline.')
param fetchTimeout string = '15s'

@description('EXTRACT_TIMEOUT: each document extraction\'s own deadline.')
param extractTimeout string = '15s'

@description('MATERIAL_IN_FLIGHT_MB: the material (bodies, documents, extracted text) held for requests in flight, in MiB; past it, 503 overloaded.')
param materialInFlightMb string = '640'

@description('MIN_UPSTREAM_TIME: the least time left for the Azure OpenAI call; less, and the answer is 500 deadline_exceeded without a call.')
param minUpstreamTime string = '3s'

@description('LONG_ANSWERS: background (answers longer than the budget run in the Responses API background mode and are delivered across hops, where the model supports it) or off.')
param longAnswers string = 'background'

@description('LONG_ANSWER_LIMIT: the longest a long answer may run across its hops; then it is cancelled upstream.')
param longAnswerLimit string = '30m'

@description('LOG_LEVEL: debug, info, warn or error.')
param logLevel string = 'info'

// Who may call (docs/auth.md). In Azure the handler refuses AUTH_MODE=none unless ALLOW_ANONYMOUS=true.

@description('AUTH_MODE: entra (tokens checked by the handler), easyauth or none.')
param authMode string = 'entra'

@minLength(1)
@description('AUTH_AUDIENCE: the API app registration\'s app ID URI and client id, comma-separated: api://<appId>,<appId>.')
param authAudience string

@description('AUTH_TENANTS: tenant ids whose users may call, comma-separated; empty: the tenant deployed to.')
param authTenants string = ''

@description('AUTH_REQUIRED_SCOPE: the delegated scope the web part asks for.')
param authRequiredScope string = 'user_impersonation'

@description('AUTH_REQUIRED_ROLE: an app role callers must hold; empty: none.')
param authRequiredRole string = ''

@description('ALLOW_ANONYMOUS: true lets AUTH_MODE=none run in Azure, open to anyone.')
param allowAnonymous string = 'false'

// Quotas (docs/operations.md, "Quotas"): counted in a table of the deployment's storage account, reached with
// the app's identity. With neither limit set the handler keeps no quota and makes no call to the table.

@description('QUOTA_TABLE: the table of the quotas and the ledger, created by the template.')
param quotaTable string = 'timeboxusage'

@description('QUOTA_USER_DAILY_TOKENS: tokens one user may spend in a UTC day; azd up sets 200000 unless the environment says otherwise (main.parameters.json); 0: no limit.')
param quotaUserDailyTokens string = ''

@description('QUOTA_TENANT_MONTHLY_TOKENS: tokens one tenant may spend in a UTC month; empty or 0: no limit.')
param quotaTenantMonthlyTokens string = ''

@description('QUOTA_FAIL_OPEN: true serves requests while the table cannot be reached (unaccounted); false answers 503.')
param quotaFailOpen string = 'false'

// The key that seals long answers' cursors (CURSOR_KEYS; docs/deploy.md, "The cursor key"): every instance opens
// the cursors the others seal. azd generates it once per environment, keeps it in .azure/<env>/config.json and
// passes the same on every provision; to rotate, give the new one and the old one as cursorKeyPrevious.

@secure()
@description('The cursor key: 48 random characters, generated by azd once per environment.')
@metadata({ azd: { type: 'generate', config: { length: 48, noSpecial: true } } })
param cursorKey string

@secure()
@description('The cursor key before a rotation, still accepted until every long answer it sealed has ended; empty: none.')
param cursorKeyPrevious string = ''

// ---- Scale --------------------------------------------------------------------------------------------------

@description('Instances at most. Each serves host.json\'s maxConcurrentRequests requests at a time.')
param maximumInstanceCount int = 40

@allowed([2048, 4096])
@description('Memory of an instance, in MB.')
param instanceMemoryMB int = 2048

var abbrs = loadJsonContent('abbreviations.json')
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }
var functionAppName = '${abbrs.webSitesFunctions}api-${resourceToken}'
var deploymentStorageContainerName = 'app-package-${take(functionAppName, 32)}-${take(resourceToken, 7)}'
var usePool = !empty(openAiBackends)
var useExistingOpenAi = !empty(openAiAccountName)
// Names known before deployment, so module scopes and parameters need no outputs of conditional modules.
var openAiName = useExistingOpenAi ? openAiAccountName : '${abbrs.cognitiveServicesAccounts}${resourceToken}'
var openAiGroupName = useExistingOpenAi && !empty(openAiResourceGroupName) ? openAiResourceGroupName : rg.name
// The pool's accounts: a new one is named after its backend; an existing one lives in its own group, or ours.
var poolAccountNames = [for b in openAiBackends: (b.?create ?? false) ? '${abbrs.cognitiveServicesAccounts}${b.name}-${take(resourceToken, 8)}' : b.accountName]
var poolGroupNames = [for b in openAiBackends: (b.?create ?? false) || empty(b.?resourceGroupName ?? '') ? rg.name : b.resourceGroupName]

// host.json is the one place the per-instance concurrency is decided; the plan's HTTP concurrency follows it,
// so the platform never sends an instance more requests than its host admits without a queue.
var hostJson = loadJsonContent('../host.json')
var perInstanceConcurrency = hostJson.extensions.http.maxConcurrentRequests
var quotasOn = (!empty(quotaUserDailyTokens) && quotaUserDailyTokens != '0') || (!empty(quotaTenantMonthlyTokens) && quotaTenantMonthlyTokens != '0')

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: '${abbrs.resourcesResourceGroups}${environmentName}'
  location: location
  tags: tags
}

module identity 'app/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: '${abbrs.managedIdentityUserAssignedIdentities}api-${resourceToken}'
    location: location
    tags: tags
  }
}

module storage 'app/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: '${abbrs.storageStorageAccounts}${resourceToken}'
    location: location
    tags: tags
    deploymentContainerName: deploymentStorageContainerName
    quotaTableName: quotaTable
  }
}

module monitoring 'app/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: '${abbrs.operationalInsightsWorkspaces}${resourceToken}'
    applicationInsightsName: '${abbrs.insightsComponents}${resourceToken}'
    location: location
    tags: tags
  }
}

// Alerts (docs/operations.md, "Alerts"): deadline answers above a rate, the quota store unavailable, the
// sign-in to Azure OpenAI failing; mailed to ALERT_EMAIL when it is set.
@description('ALERT_EMAIL: where the alert rules mail; empty: they show in the portal only.')
param alertEmail string = ''

module alerts 'app/alerts.bicep' = {
  name: 'alerts'
  scope: rg
  params: {
    location: location
    tags: tags
    logAnalyticsId: monitoring.outputs.logAnalyticsId
    namePrefix: 'timebox-${resourceToken}'
    alertEmail: alertEmail
  }
}

module newOpenAi 'app/openai.bicep' = if (!useExistingOpenAi && !usePool) {
  name: 'openai'
  scope: rg
  params: {
    name: openAiName
    location: location
    tags: tags
    deploymentName: openAiDeploymentName
    modelName: openAiModelName
    modelVersion: openAiModelVersion
    capacity: openAiCapacity
  }
}

// The role on the Azure OpenAI account, wherever it lives: the existing account's group, or ours.
module openAiAccess 'app/openai-access.bicep' = if (!usePool) {
  name: 'openai-access'
  scope: resourceGroup(openAiGroupName)
  dependsOn: [rg, newOpenAi]
  params: {
    accountName: openAiName
    principalId: identity.outputs.principalId
  }
}

// The pool's new accounts, each with its deployment (a provisioned one with skuName ProvisionedManaged).
module poolOpenAi 'app/openai.bicep' = [for (b, i) in openAiBackends: if (b.?create ?? false) {
  name: 'openai-pool-${i}'
  scope: rg
  params: {
    name: poolAccountNames[i]
    location: b.?location ?? location
    tags: tags
    deploymentName: b.deploymentName
    modelName: b.modelName
    modelVersion: b.modelVersion
    capacity: b.capacity
    skuName: b.?skuName ?? 'GlobalStandard'
  }
}]

// Cognitive Services OpenAI User on every account of the pool, wherever it lives, and its endpoint.
module poolAccess 'app/openai-access.bicep' = [for (b, i) in openAiBackends: {
  name: 'openai-access-${i}'
  scope: resourceGroup(poolGroupNames[i])
  dependsOn: [rg, poolOpenAi]
  params: {
    accountName: poolAccountNames[i]
    principalId: identity.outputs.principalId
  }
}]

module rbac 'app/rbac.bicep' = {
  name: 'rbac'
  scope: rg
  params: {
    storageAccountName: storage.outputs.name
    quotaTableName: storage.outputs.quotaTableName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    principalId: identity.outputs.principalId
  }
}

module api 'app/api.bicep' = {
  name: 'api'
  scope: rg
  dependsOn: [rbac, openAiAccess, poolAccess]
  params: {
    name: functionAppName
    location: location
    tags: tags
    identityId: identity.outputs.resourceId
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentStorageContainerName: deploymentStorageContainerName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    perInstanceConcurrency: perInstanceConcurrency
    openAiEndpoint: usePool ? '' : openAiAccess.outputs.endpoint
    // With the pool, the name callers use (the OpenAI surface's model); each backend has its own.
    openAiDeploymentName: openAiDeploymentName
    // The model of a deployment this template creates is known, and so is the pool's (every backend runs
    // it); an existing one's is its name's to say.
    openAiModel: useExistingOpenAi && !usePool ? '' : openAiModelName
    openAiApiVersion: usePool ? '' : openAiApiVersion
    // The pool as AZURE_OPENAI_BACKENDS lists it: names, endpoints and deployments; no key (the identity signs in).
    openAiBackendList: [for (b, i) in openAiBackends: {
      name: b.name
      endpoint: poolAccess[i].outputs.endpoint
      deployment: b.deploymentName
      model: b.?model ?? b.?modelName ?? openAiModelName
      priority: b.?priority ?? 1
      weight: b.?weight ?? 1
      apiVersion: b.?apiVersion ?? ''
    }]
    backendCooldownMax: backendCooldownMax
    allowedOrigins: allowedOrigins
    requestBudget: requestBudget
    fastFailureThreshold: fastFailureThreshold
    clientTimeoutMargin: clientTimeoutMargin
    upstreamMaxAttempts: upstreamMaxAttempts
    maxTokens: maxTokens
    contextWindow: contextWindow
    tokenizer: tokenizer
    deploymentTpm: empty(deploymentTpm) && !useExistingOpenAi && !usePool ? string(openAiCapacity * 1000) : deploymentTpm
    fetchTimeout: fetchTimeout
    extractTimeout: extractTimeout
    materialInFlightMb: materialInFlightMb
    minUpstreamTime: minUpstreamTime
    longAnswers: longAnswers
    longAnswerLimit: longAnswerLimit
    logLevel: logLevel
    authMode: authMode
    authAudience: authAudience
    authTenants: empty(authTenants) ? tenant().tenantId : authTenants
    authRequiredScope: authRequiredScope
    authRequiredRole: authRequiredRole
    // The cloud's own authority, sovereign clouds included (https://login.microsoftonline.com/ in the public one).
    azureAuthorityHost: environment().authentication.loginEndpoint
    allowAnonymous: allowAnonymous
    quotaTableEndpoint: quotasOn ? storage.outputs.tableEndpoint : ''
    quotaTable: quotaTable
    quotaUserDailyTokens: quotaUserDailyTokens
    quotaTenantMonthlyTokens: quotaTenantMonthlyTokens
    quotaFailOpen: quotaFailOpen
    cursorKeys: empty(cursorKeyPrevious) ? base64(cursorKey) : '${base64(cursorKey)},${base64(cursorKeyPrevious)}'
  }
}

// ---- Outputs (azd stores them in .azure/<env>/.env) -----------------------------------------------------------

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output SERVICE_API_NAME string = api.outputs.name
@description('The app\'s URL: the baseUrl of the web part\'s TimeboxClient, and timebox health --url.')
output SERVICE_API_URI string = api.outputs.uri
@description('The managed identity\'s client id (AZURE_CLIENT_ID of the app).')
output AZURE_CLIENT_ID string = identity.outputs.clientId
output AZURE_OPENAI_ENDPOINT string = usePool ? '' : openAiAccess.outputs.endpoint
output AZURE_OPENAI_DEPLOYMENT string = openAiDeploymentName
@description('What to paste into the web part: the TimeboxClient baseUrl, and the origins the app admits.')
output WEB_PART_BASE_URL string = api.outputs.uri
output ALLOWED_ORIGINS string = allowedOrigins
