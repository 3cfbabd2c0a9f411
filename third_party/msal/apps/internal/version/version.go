// Copyright (c) Microsoft Corporation.
// Licensed under the MIT license.

// Package version keeps the version number of the client package.
package version

// SKU is the product name of this SDK communicated to the server.
const SKU = "MSAL.Go"

// Version is the version of this client package that is communicated to the server.
const Version = "1.10.1"
