declare interface IAskWebPartStrings {
  PropertyPaneDescription: string;
  ConnectionGroupName: string;
  FunctionAppUrlLabel: string;
  FunctionAppUrlDescription: string;
  AppIdUriLabel: string;
  AppIdUriDescription: string;
  NotConfigured: string;
  QuestionLabel: string;
  QuestionPlaceholder: string;
  AskButton: string;
  CancelButton: string;
  TimelineCaption: string;
  ColumnAttempt: string;
  ColumnStatus: string;
  ColumnElapsed: string;
  ColumnDecision: string;
  ColumnWait: string;
  ColumnCode: string;
  AnswerHeading: string;
  PartialLabel: string;
  StreamLabel: string;
  StreamDescription: string;
  StateIdle: string;
  StateRunning: string;
  StateStreaming: string;
  StateWaiting: string;
  StateAnswered: string;
  StateFailed: string;
  StateCancelled: string;
  NetworkError: string;
  Cancelled: string;
  CancelledBeforeSent: string;
  CancelledMessage: string;
  RequestIdLabel: string;
  DetailsFinish: string;
  DetailsTokens: string;
  DetailsUpstream: string;
  DetailsUpstreamOne: string;
  DetailsServer: string;
  DetailsTruncated: string;
  UsageToday: string;
  UsageThisMonth: string;
  UsageHeld: string;
  UsageUnavailable: string;
  ShowUsageLabel: string;
  StillWriting: string;
  AttemptOfPart: string;
}

declare module 'AskWebPartStrings' {
  const strings: IAskWebPartStrings;
  export = strings;
}
