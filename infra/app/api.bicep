// The Function App: Flex Consumption on Linux, the custom handler runtime, the deployment package in blob
// storage read by the user-assigned identity, and every handler setting from a parameter.
param name string
param location string
param tags object = {}
param identityId string
param identityClientId string
param storageAccountName string
param deploymentStorageContainerName string
param applicationInsightsName string
param maximumInstanceCount int
param instanceMemoryMB int
@description('HTTP requests one instance is given at a time: host.json\'s maxConcurrentRequests.')
param perInstanceConcurrency int

param openAiEndpoint string
param openAiDeploymentName string
@description('AZURE_OPENAI_MODEL: the model the deployment runs; empty: the deployment\'s name says it.')
param openAiModel string
param openAiApiVersion string
@description('The pool: AZURE_OPENAI_BACKENDS\'s entries, endpoints resolved; empty: the single endpoint.')
param openAiBackendList array = []
@description('AZURE_OPENAI_BACKENDS: the pool as the handler reads it, a JSON array; empty without one.')
param openAiBackends string = empty(openAiBackendList) ? '' : string(openAiBackendList)
param backendCooldownMax string
param allowedOrigins string
param requestBudget string
param fastFailureThreshold string
param clientTimeoutMargin string
param upstreamMaxAttempts string
param maxTokens string
param contextWindow string
param tokenizer string
param deploymentTpm string
param fetchTimeout string
param extractTimeout string
param materialInFlightMb string
param minUpstreamTime string
param longAnswers string
param longAnswerLimit string
param logLevel string
param authMode string
param authAudience string
param authTenants string
param authRequiredScope string
param authRequiredRole string
param azureAuthorityHost string
param allowAnonymous string
@description('The Table service URL of the quota table; empty: no quotas.')
param quotaTableEndpoint string
param quotaTable string
param quotaUserDailyTokens string
param quotaTenantMonthlyTokens string
param quotaFailOpen string
@secure()
@description('CURSOR_KEYS: the cursor key, and the one before a rotation, each in base64.')
param cursorKeys string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${name}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true // Linux
  }
}

// What the handler reads (docs/operations.md). internal/repocheck keeps this list equal to the settings the
// handler's code reads, less those the platform sets (FUNCTIONS_CUSTOMHANDLER_PORT, IDENTITY_ENDPOINT) and
// the Azure OpenAI key setting, which a deployment never uses: it calls with its managed identity.
var handlerSettings = {
  AZURE_OPENAI_ENDPOINT: openAiEndpoint
  AZURE_OPENAI_DEPLOYMENT: openAiDeploymentName
  AZURE_OPENAI_MODEL: openAiModel
  AZURE_OPENAI_API_VERSION: openAiApiVersion
  AZURE_OPENAI_BACKENDS: openAiBackends
  BACKEND_COOLDOWN_MAX: backendCooldownMax
  AZURE_CLIENT_ID: identityClientId
  ALLOWED_ORIGINS: allowedOrigins
  REQUEST_BUDGET: requestBudget
  FAST_FAILURE_THRESHOLD: fastFailureThreshold
  CLIENT_TIMEOUT_MARGIN: clientTimeoutMargin
  UPSTREAM_MAX_ATTEMPTS: upstreamMaxAttempts
  MAX_TOKENS: maxTokens
  CONTEXT_WINDOW: contextWindow
  TOKENIZER: tokenizer
  DEPLOYMENT_TPM: deploymentTpm
  FETCH_TIMEOUT: fetchTimeout
  EXTRACT_TIMEOUT: extractTimeout
  MATERIAL_IN_FLIGHT_MB: materialInFlightMb
  MIN_UPSTREAM_TIME: minUpstreamTime
  LONG_ANSWERS: longAnswers
  LONG_ANSWER_LIMIT: longAnswerLimit
  LOG_LEVEL: logLevel
  AUTH_MODE: authMode
  AUTH_AUDIENCE: authAudience
  AUTH_TENANTS: authTenants
  AUTH_REQUIRED_SCOPE: authRequiredScope
  AUTH_REQUIRED_ROLE: authRequiredRole
  AZURE_AUTHORITY_HOST: azureAuthorityHost
  ALLOW_ANONYMOUS: allowAnonymous
  QUOTA_TABLE_ENDPOINT: quotaTableEndpoint
  QUOTA_TABLE: quotaTable
  QUOTA_USER_DAILY_TOKENS: quotaUserDailyTokens
  QUOTA_TENANT_MONTHLY_TOKENS: quotaTenantMonthlyTokens
  QUOTA_FAIL_OPEN: quotaFailOpen
  CURSOR_KEYS: cursorKeys
}

// What the Functions host reads: its storage by identity (no connection string), and Application Insights
// with Entra ID ingestion. On Flex Consumption the runtime is set in functionAppConfig, not by
// FUNCTIONS_WORKER_RUNTIME or FUNCTIONS_EXTENSION_VERSION (both refused there).
var hostSettings = {
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  AzureWebJobsStorage__blobServiceUri: storage.properties.primaryEndpoints.blob
  APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsights.properties.ConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentStorageContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
        triggers: {
          http: {
            perInstanceConcurrency: perInstanceConcurrency
          }
        }
      }
      runtime: {
        name: 'custom'
        version: '1.0'
      }
    }
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      // The Flex front end answers preflights itself for custom handlers: it must admit the same origins
      // as the handler (docs/platform.md). The handler still sends its own Access-Control-Expose-Headers.
      cors: {
        allowedOrigins: split(allowedOrigins, ',')
        supportCredentials: false
      }
    }
  }

  resource settings 'config' = {
    name: 'appsettings'
    properties: union(handlerSettings, hostSettings)
  }

  // No basic-auth publishing: deployments go through Entra ID (azd, or the OIDC workflow).
  resource scm 'basicPublishingCredentialsPolicies' = {
    name: 'scm'
    properties: { allow: false }
  }

  resource ftp 'basicPublishingCredentialsPolicies' = {
    name: 'ftp'
    properties: { allow: false }
  }
}

output name string = app.name
output uri string = 'https://${app.properties.defaultHostName}'
