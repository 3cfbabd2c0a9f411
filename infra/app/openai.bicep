// A new Azure OpenAI account and one chat deployment, for when no existing account is given. Local (key)
// authentication is off: the app reaches it with its managed identity only.
param name string
param location string
param tags object = {}
param deploymentName string
param modelName string
param modelVersion string
@description('Thousands of tokens per minute; for a provisioned deployment, its units (PTU).')
param capacity int
@description('The deployment type: GlobalStandard (pay as you go), or ProvisionedManaged / GlobalProvisionedManaged (PTU).')
param skuName string = 'GlobalStandard'

resource account 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: name
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: { name: 'S0' }
  properties: {
    customSubDomainName: name // Entra ID authentication needs the account's own subdomain
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
  }
}

resource deployment 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = {
  parent: account
  name: deploymentName
  sku: {
    name: skuName
    capacity: capacity
  }
  properties: {
    model: {
      format: 'OpenAI'
      name: modelName
      version: modelVersion
    }
  }
}

output name string = account.name
output endpoint string = account.properties.endpoint
