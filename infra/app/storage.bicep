// Deployment and host storage, and the quota table, reached only by managed identity: shared-key access is off,
// so no account key or connection string with a key can work, and none is written anywhere.
param name string
param location string
param tags object = {}
param deploymentContainerName string
@description('The quota table (QUOTA_TABLE): its counters and the ledger of every request.')
param quotaTableName string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    minimumTlsVersion: 'TLS1_2'
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

// The Table service holds the quotas (docs/operations.md, "Quotas"): the handler never creates a table in
// Azure, so the template does.
resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource quotaTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = {
  parent: tableService
  name: quotaTableName
}

output name string = storage.name
output tableEndpoint string = storage.properties.primaryEndpoints.table
output quotaTableName string = quotaTable.name
output blobEndpoint string = storage.properties.primaryEndpoints.blob
