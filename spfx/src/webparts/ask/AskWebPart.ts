import * as React from 'react';
import * as ReactDom from 'react-dom';
import { Version } from '@microsoft/sp-core-library';
import { type IPropertyPaneConfiguration, PropertyPaneTextField, PropertyPaneToggle } from '@microsoft/sp-property-pane';
import { BaseClientSideWebPart } from '@microsoft/sp-webpart-base';
import { AadHttpClient } from '@microsoft/sp-http';
import * as strings from 'AskWebPartStrings';

import Ask, { type IAskProps } from './components/Ask';
import { checkAppIdUri, checkFunctionAppUrl } from './settings';
import { askFor, connectionKey, type Ask as AskCall } from './timebox';

export interface IAskWebPartProps {
  /** The Function App's base URL, e.g. https://contoso-timebox.azurewebsites.net. */
  functionAppUrl: string;
  /** The Function App's app registration: its application ID URI (api://...) or client ID. */
  appIdUri: string;
  /** Stream answers (fetch with a token from AadTokenProvider) or not (AadHttpClient). Default true. */
  stream?: boolean;
  /** Show the tokens used of the caller's quota under the form. Default true. */
  showUsage?: boolean;
}

export default class AskWebPart extends BaseClientSideWebPart<IAskWebPartProps> {
  private ask: AskCall | undefined;
  private askKey: string | undefined;

  public render(): void {
    const element: React.ReactElement<IAskProps> = React.createElement(Ask, { ask: this.currentAsk(), showUsage: this.properties.showUsage !== false });
    ReactDom.render(element, this.domElement);
  }

  /** The call for the current properties; a new one (new token audience, new URL, other path) when they change. */
  private currentAsk(): AskCall | undefined {
    const key = connectionKey(this.properties);
    if (this.askKey !== key) {
      this.ask = askFor(this.properties, {
        aadHttpClientFactory: this.context.aadHttpClientFactory,
        aadTokenProviderFactory: this.context.aadTokenProviderFactory,
        aadHttpClientConfiguration: AadHttpClient.configurations.v1,
      });
      this.askKey = key;
    }
    return this.ask;
  }

  protected onDispose(): void {
    // Unmounting cancels the call in flight (the component's cleanup aborts it).
    ReactDom.unmountComponentAtNode(this.domElement);
  }

  protected get dataVersion(): Version {
    return Version.parse('1.0');
  }

  // Apply the properties when the pane closes, not on every keystroke: each change makes a new client.
  protected get disableReactivePropertyChanges(): boolean {
    return true;
  }

  protected getPropertyPaneConfiguration(): IPropertyPaneConfiguration {
    return {
      pages: [
        {
          header: { description: strings.PropertyPaneDescription },
          groups: [
            {
              groupName: strings.ConnectionGroupName,
              groupFields: [
                PropertyPaneTextField('functionAppUrl', {
                  label: strings.FunctionAppUrlLabel,
                  description: strings.FunctionAppUrlDescription,
                  onGetErrorMessage: checkFunctionAppUrl,
                  deferredValidationTime: 300,
                }),
                PropertyPaneTextField('appIdUri', {
                  label: strings.AppIdUriLabel,
                  description: strings.AppIdUriDescription,
                  onGetErrorMessage: checkAppIdUri,
                  deferredValidationTime: 300,
                }),
                PropertyPaneToggle('stream', {
                  label: strings.StreamLabel,
                  onText: strings.StreamDescription,
                  offText: strings.StreamDescription,
                }),
                PropertyPaneToggle('showUsage', {
                  label: strings.ShowUsageLabel,
                }),
              ],
            },
          ],
        },
      ],
    };
  }
}
