// Alert rules on the app's log lines (docs/operations.md, "Alerts"): scheduled queries on the Log Analytics
// workspace Application Insights writes to (AppTraces, one JSON line per request in Message). Each fires to
// the action group when alertEmail is set; without it the rules still fire and show in the portal.
param location string
param tags object = {}
param logAnalyticsId string
param namePrefix string
@description('Where the alerts are mailed; empty: no action group, the alerts show in the portal only.')
param alertEmail string = ''
@description('Answers 500 deadline_exceeded in 15 minutes that fire the deadline alert.')
param deadlineAlertCount int = 10

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: '${namePrefix}-alerts'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'timebox'
    enabled: true
    emailReceivers: [{ name: 'operator', emailAddress: alertEmail, useCommonAlertSchema: true }]
  }
}

var rules = [
  {
    name: 'deadline-answers'
    description: 'Answers 500 deadline_exceeded above the rate set (deadlineAlertCount in 15 minutes): Azure OpenAI or the request path is slow.'
    severity: 2
    query: 'AppTraces | where Message has \'"code":"deadline_exceeded"\''
    threshold: deadlineAlertCount - 1
  }
  {
    name: 'quota-store-unavailable'
    description: 'The quota store (the table) could not be reached: questions answered 503 quota_unavailable, or served unaccounted with QUOTA_FAIL_OPEN, or holds left unsettled.'
    severity: 1
    query: 'AppTraces | where Message has \'"quota":"unavailable"\' or Message has \'"quota":"skipped"\' or Message has \'"quota":"unsettled"\''
    threshold: 0
  }
  {
    name: 'upstream-auth-failing'
    description: 'The app cannot sign in to Azure OpenAI (500 upstream_auth_unavailable), or Azure OpenAI refuses its identity (upstream_misconfigured).'
    severity: 1
    query: 'AppTraces | where Message has \'upstream_auth_unavailable\' or Message has \'upstream_misconfigured\' or Message has \'cannot sign in to Azure OpenAI\''
    threshold: 0
  }
]

resource alerts 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = [for rule in rules: {
  name: '${namePrefix}-${rule.name}'
  location: location
  tags: tags
  properties: {
    displayName: '${namePrefix}: ${rule.name}'
    description: rule.description
    severity: rule.severity
    enabled: true
    scopes: [logAnalyticsId]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: rule.query
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: rule.threshold
          failingPeriods: { numberOfEvaluationPeriods: 1, minFailingPeriodsToAlert: 1 }
        }
      ]
    }
    autoMitigate: true
    actions: { actionGroups: empty(alertEmail) ? [] : [actionGroup.id] }
  }
}]
