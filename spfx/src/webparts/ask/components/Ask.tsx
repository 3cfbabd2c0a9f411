import * as React from 'react';
import { DefaultButton, MessageBar, MessageBarType, PrimaryButton, Stack, TextField, getTheme, mergeStyleSets, type ITheme } from '@fluentui/react';
import * as strings from 'AskWebPartStrings';

import type { Ask as AskCall } from '../timebox';
import { answered, attemptLabel, attempted, failed, hopped, idle, partLine, started, statusLine, streamed, usageFailedText, usageText, type AskView, type TimelineRow } from '../view';

export interface IAskProps {
  /** The configured call, or undefined while the property pane lacks the URL or the app ID URI. */
  ask: AskCall | undefined;
  /** How often the running counter moves, in ms. */
  tickMs?: number;
  /** Show the caller's quota under the form ("12,340 of 200,000 tokens used today"), read on load and after each answer. */
  showUsage?: boolean;
}

// Colours from the site's theme (SharePoint loads it into Fluent UI's), not fixed ones, so dark themes work.
function classNames(theme: ITheme): Record<'timeline' | 'success' | 'retry' | 'stop' | 'cancelled' | 'answer' | 'partial' | 'details', string> {
  const c = theme.semanticColors;
  return mergeStyleSets({
    timeline: { borderCollapse: 'collapse', width: '100%', selectors: { 'th, td': { textAlign: 'left', padding: '2px 8px' } } },
    success: { color: c.successIcon },
    retry: { color: c.warningIcon },
    stop: { color: c.errorText },
    cancelled: { color: c.bodySubtext },
    answer: { whiteSpace: 'pre-wrap' },
    partial: { fontStyle: 'italic', color: c.bodySubtext },
    details: { color: c.bodySubtext, fontSize: theme.fonts.small.fontSize },
  });
}

/** Cancelling with this reason tells the view the user (or the page) ended the call. */
function cancelReason(message: string): DOMException {
  return new DOMException(message, 'AbortError');
}

export default function Ask({ ask, tickMs = 100, showUsage = false }: IAskProps): React.ReactElement {
  const [question, setQuestion] = React.useState('');
  const [view, setView] = React.useState<AskView>(idle);
  const [now, setNow] = React.useState(() => Date.now());
  const controller = React.useRef<AbortController | undefined>(undefined);
  // The cursor of the long answer in flight, from its latest hop: what cancels it at Azure OpenAI.
  // Set only while its call is controller's, and cleared with it.
  const cursor = React.useRef<string | undefined>(undefined);
  const running = view.phase === 'running';
  const classes = React.useMemo(() => classNames(getTheme()), []);

  const mounted = React.useRef(true);

  // The web part disposed (the component unmounted, the page still there) cancels the call in
  // flight: the abort ends the hop's connection, and past the first hop the client also cancels
  // the long answer by its cursor, with keepalive (the web part may be disposed as the page unloads).
  React.useEffect(
    () => () => {
      mounted.current = false;
      controller.current?.abort(cancelReason('The page was left.'));
    },
    [],
  );

  // A page that goes away (a tab closed, another site) takes the hop's connection with it, but a
  // long answer goes on at Azure OpenAI until it is cancelled by its cursor, and only a keepalive
  // request outlives the page. The signal is left alone: its abort would send the same cancel again.
  React.useEffect(() => {
    const leave = (): void => {
      if (cursor.current) ask?.cancel?.(cursor.current, { keepalive: true }).catch(() => undefined);
    };
    window.addEventListener('pagehide', leave);
    return () => window.removeEventListener('pagehide', leave);
  }, [ask]);

  // The running counter: re-render while a call is in flight.
  React.useEffect(() => {
    if (!running) return undefined;
    const id = setInterval(() => setNow(Date.now()), tickMs);
    return () => clearInterval(id);
  }, [running, tickMs]);

  // The quota line: information beside the answer, so a failure to read it only hides it.
  const [usage, setUsage] = React.useState<string | undefined>(undefined);
  const refreshUsage = React.useCallback(async (): Promise<void> => {
    if (!showUsage || !ask?.usage) return;
    let line: string | undefined;
    try {
      line = usageText(await ask.usage(new AbortController().signal));
    } catch (err) {
      line = usageFailedText(err);
    }
    if (mounted.current) setUsage(line);
  }, [ask, showUsage]);
  React.useEffect(() => {
    refreshUsage().catch(() => undefined);
  }, [refreshUsage]);

  const cancel = React.useCallback(() => controller.current?.abort(cancelReason('Cancelled by the user.')), []);

  const submit = React.useCallback(async (): Promise<void> => {
    if (!ask || running || question.trim() === '') return;
    const c = new AbortController();
    controller.current = c;
    cursor.current = undefined;
    setView(started(Date.now()));
    setNow(Date.now());
    try {
      const r = await ask(question.trim(), {
        signal: c.signal,
        onAttempt: (e) => mounted.current && setView((v) => attempted(v, e, Date.now())),
        onDelta: (_piece, soFar) => mounted.current && setView((v) => streamed(v, soFar)),
        onHop: (hop, next) => {
          if (controller.current === c) cursor.current = next;
          if (mounted.current) setView((v) => hopped(v, hop, Date.now()));
        },
      });
      if (!c.signal.aborted) setView((v) => answered(v, r, Date.now()));
    } catch (err) {
      if (mounted.current) setView((v) => failed(v, err, Date.now(), c.signal.aborted));
    } finally {
      if (controller.current === c) {
        controller.current = undefined;
        cursor.current = undefined;
      }
      if (mounted.current) setNow(Date.now());
    }
    await refreshUsage();
  }, [ask, running, question, refreshUsage]);

  const onKeyDown = (ev: React.KeyboardEvent): void => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      submit().catch(() => undefined);
    } else if (ev.key === 'Escape' && running) {
      ev.preventDefault();
      cancel();
    }
  };

  if (!ask) {
    return <MessageBar messageBarType={MessageBarType.warning}>{strings.NotConfigured}</MessageBar>;
  }

  const part = partLine(view);
  return (
    <Stack tokens={{ childrenGap: 12 }}>
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          submit().catch(() => undefined);
        }}
      >
        <Stack tokens={{ childrenGap: 8 }}>
          <TextField
            label={strings.QuestionLabel}
            placeholder={strings.QuestionPlaceholder}
            multiline
            rows={3}
            required
            value={question}
            onChange={(_, v) => setQuestion(v ?? '')}
            onKeyDown={onKeyDown}
          />
          <Stack horizontal tokens={{ childrenGap: 8 }} verticalAlign="center">
            <PrimaryButton type="submit" text={strings.AskButton} disabled={running || question.trim() === ''} />
            <DefaultButton text={strings.CancelButton} onClick={cancel} disabled={!running} />
            {/* A timer, not a status: its text changes every tick, so it is not announced (the answer and the error are). */}
            <span role="timer" data-phase={view.phase}>
              {statusLine(view, now)}
            </span>
          </Stack>
          {part && (
            <span data-testid="part" aria-live="polite">
              {part}
            </span>
          )}
          {usage && (
            <span className={classes.details} data-testid="usage" aria-live="polite">
              {usage}
            </span>
          )}
        </Stack>
      </form>

      {view.rows.length > 0 && <Timeline rows={view.rows} classes={classes} />}

      {/* Announced once it is complete, not piece by piece while it streams. */}
      <section aria-label={strings.AnswerHeading} aria-live="polite" aria-busy={running} className={classes.answer}>
        {view.answer}
        {view.partial && <div className={classes.partial}>{strings.PartialLabel}</div>}
      </section>

      {view.details && (
        <div className={classes.details}>
          {view.details}; {strings.RequestIdLabel}: <code>{view.requestId}</code>
        </div>
      )}

      {view.error && (
        <MessageBar messageBarType={view.phase === 'cancelled' ? MessageBarType.info : MessageBarType.error} isMultiline>
          <span data-testid="error">{view.error.message}</span>
          {view.error.requestId && (
            <span>
              {' '}
              {strings.RequestIdLabel}: <code>{view.error.requestId}</code>
            </span>
          )}
        </MessageBar>
      )}

    </Stack>
  );
}

function Timeline({ rows, classes }: { rows: TimelineRow[]; classes: ReturnType<typeof classNames> }): React.ReactElement {
  return (
    <table className={classes.timeline}>
      <caption>{strings.TimelineCaption}</caption>
      <thead>
        <tr>
          <th scope="col">{strings.ColumnAttempt}</th>
          <th scope="col">{strings.ColumnStatus}</th>
          <th scope="col">{strings.ColumnElapsed}</th>
          <th scope="col">{strings.ColumnDecision}</th>
          <th scope="col">{strings.ColumnWait}</th>
          <th scope="col">{strings.ColumnCode}</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={`${r.part ?? 1}.${r.attempt}`} className={classes[r.kind]}>
            <td>{attemptLabel(r)}</td>
            <td>{r.status}</td>
            <td>{r.elapsed}</td>
            <td>{r.decision}</td>
            <td>{r.wait}</td>
            <td>{r.code}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
