// The app's user-assigned managed identity: one identity for deployment storage, host storage, Application
// Insights and Azure OpenAI, so every grant is visible in one place and survives re-creating the app.
param name string
param location string
param tags object = {}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: name
  location: location
  tags: tags
}

output resourceId string = identity.id
output clientId string = identity.properties.clientId
output principalId string = identity.properties.principalId
