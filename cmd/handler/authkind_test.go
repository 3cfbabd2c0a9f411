package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/timebox-dev/timebox/internal/config"
)

// The start-up line names the upstream auth without the key.
func TestAuthKind(t *testing.T) {
	assert.Equal(t, "api-key", authKind(config.Config{Backends: []config.Backend{{APIKey: "k"}}}))
	assert.Equal(t, "entra-id", authKind(config.Config{Backends: []config.Backend{{}}}))
	assert.Equal(t, "api-key and entra-id", authKind(config.Config{Backends: []config.Backend{{APIKey: "k"}, {}}}))
}
