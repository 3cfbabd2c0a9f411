package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/timebox-dev/timebox/internal/config"
)

func TestQuotaSettings(t *testing.T) {
	c, err := config.Load(env(valid()))
	require.NoError(t, err)
	assert.Equal(t, config.Quota{Table: "timeboxusage"}, c.Quota, "unset: no quotas")

	kv := valid()
	kv["QUOTA_TABLE_ENDPOINT"] = "https://timebox.table.core.windows.net/"
	kv["QUOTA_TABLE"] = "usage2026"
	kv["QUOTA_USER_DAILY_TOKENS"] = "200000"
	kv["QUOTA_TENANT_MONTHLY_TOKENS"] = "20000000"
	kv["QUOTA_FAIL_OPEN"] = "true"
	c, err = config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, "https://timebox.table.core.windows.net", c.Quota.Endpoint.String())
	assert.Equal(t, "usage2026", c.Quota.Table)
	assert.EqualValues(t, 200_000, c.Quota.UserDailyTokens)
	assert.EqualValues(t, 20_000_000, c.Quota.TenantMonthlyTokens)
	assert.True(t, c.Quota.FailOpen)

	kv = valid()
	kv["QUOTA_TABLE_ENDPOINT"] = "http://127.0.0.1:10002/devstoreaccount1"
	c, err = config.Load(env(kv))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:10002/devstoreaccount1", c.Quota.Endpoint.String(), "Azurite, on a loopback host")
}

func TestQuotaSettingsRefused(t *testing.T) {
	tests := []struct {
		name string
		kv   map[string]string
	}{
		{"QUOTA_TABLE_ENDPOINT", map[string]string{"QUOTA_USER_DAILY_TOKENS": "1000"}},
		{"QUOTA_TABLE_ENDPOINT", map[string]string{"QUOTA_TABLE_ENDPOINT": "http://timebox.table.core.windows.net"}},
		{"QUOTA_TABLE_ENDPOINT", map[string]string{"QUOTA_TABLE_ENDPOINT": "https://timebox.table.core.windows.net/?sv=2022&sig=x"}},
		{"QUOTA_TABLE_ENDPOINT", map[string]string{"QUOTA_TABLE_ENDPOINT": "timebox.table.core.windows.net"}},
		{"QUOTA_TABLE", map[string]string{"QUOTA_TABLE": "time-box"}},
		{"QUOTA_TABLE", map[string]string{"QUOTA_TABLE": "tb"}},
		{"QUOTA_USER_DAILY_TOKENS", map[string]string{"QUOTA_TABLE_ENDPOINT": "https://a.table.core.windows.net", "QUOTA_USER_DAILY_TOKENS": "-1"}},
		{"QUOTA_TENANT_MONTHLY_TOKENS", map[string]string{"QUOTA_TABLE_ENDPOINT": "https://a.table.core.windows.net", "QUOTA_TENANT_MONTHLY_TOKENS": "20M"}},
		{"QUOTA_FAIL_OPEN", map[string]string{"QUOTA_FAIL_OPEN": "yes"}},
	}
	for _, tt := range tests {
		kv := valid()
		for k, v := range tt.kv {
			kv[k] = v
		}
		_, err := config.Load(env(kv))
		require.Error(t, err, "%v", tt.kv)
		assert.Contains(t, err.Error(), tt.name+":", "%v", tt.kv)
	}
}
