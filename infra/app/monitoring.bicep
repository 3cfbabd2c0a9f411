// Log Analytics and Application Insights with local authentication off: telemetry is accepted only from an
// Entra ID identity (the app's, which gets Monitoring Metrics Publisher in rbac.bicep), so the connection
// string's instrumentation key alone cannot write to it.
param logAnalyticsName string
param applicationInsightsName string
param location string
param tags object = {}

resource logAnalytics 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logAnalytics.id
    DisableLocalAuth: true
  }
}

output applicationInsightsName string = applicationInsights.name
output logAnalyticsName string = logAnalytics.name
output logAnalyticsId string = logAnalytics.id
