package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/cli/internal/config"
	"github.com/xpromo/xpromo/server/assembly"
)

func readConfig(t *testing.T, path string) config.File {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var f config.File
	require.NoError(t, json.Unmarshal(data, &f))
	return f
}

// TestConfigFile: `apps register` writes the profile to a 0600 file in a
// 0700 directory, and later commands use it without flags or env.
func TestConfigFile(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	app := e.register("", "Saved", "com.example.saved")
	other := e.register("work", "Work", "com.example.work")

	st, err := os.Stat(e.configPath())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the config file holds API keys")
	dir, err := os.Stat(filepath.Dir(e.configPath()))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	f := readConfig(t, e.configPath())
	assert.Equal(t, config.Profile{BaseURL: srv.url, AppID: app.appID, APIKey: app.apiKey, ScoringJobID: f.Profiles["default"].ScoringJobID}, f.Profiles["default"])
	assert.Equal(t, other.appID, f.Profiles["work"].AppID)

	// Without the env: the file's base URL and key are enough.
	delete(e.vars, "XPROMO_BASE_URL")
	e.ok("apps", "score")
	e.ok("apps", "score", "--profile", "work")
	e.vars["XPROMO_PROFILE"] = "work"
	assert.Contains(t, e.ok("config", "show").stdout, other.appID)

	// XPROMO_CONFIG names another file.
	alt := filepath.Join(t.TempDir(), "nested", "xpromo.json")
	e.vars["XPROMO_CONFIG"] = alt
	e.vars["XPROMO_BASE_URL"] = srv.url
	e.register("", "Alt", "com.example.alt")
	st, err = os.Stat(alt)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// A file others can read is used, with a warning.
	require.NoError(t, os.Chmod(alt, 0o644))
	r := e.ok("apps", "score")
	assert.Contains(t, r.stderr, "warning: "+alt+" is readable by others")

	// `config set` from stdin; the admin token is then used by admin commands.
	e.stdin = adminToken + "\n"
	e.ok("config", "set", "admin_token", "-")
	assert.Equal(t, adminToken, readConfig(t, alt).Profiles["work"].AdminToken)
	e.ok("admin", "audit")
	e.fails(2, "usage", "config", "set", "colour", "blue")
}

// TestPrecedence: flag > env > file > default, each setting on its own.
func TestPrecedence(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	app := e.register("", "Precedence", "com.example.prec")
	delete(e.vars, "XPROMO_BASE_URL")

	type shown struct{ Value, Source string }
	show := func(args ...string) map[string]shown {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(e.ok(append([]string{"config", "show", "--json"}, args...)...).stdout), &m))
		out := map[string]shown{}
		for k, v := range m {
			var s shown
			if json.Unmarshal(v, &s) == nil {
				out[k] = s
			}
		}
		return out
	}

	s := show()
	assert.Equal(t, shown{srv.url, "file"}, s["base_url"])
	assert.Equal(t, shown{app.appID, "file"}, s["app_id"])
	assert.Equal(t, shown{config.Mask(app.apiKey), "file"}, s["api_key"], "masked")
	assert.Equal(t, shown{"default", "default"}, s["profile"])

	e.vars["XPROMO_BASE_URL"] = "http://env.invalid"
	e.vars["XPROMO_API_KEY"] = "xp_test_fromtheenvironment000000000000"
	s = show()
	assert.Equal(t, shown{"http://env.invalid", "env"}, s["base_url"])
	assert.Equal(t, "env", s["api_key"].Source)
	assert.Equal(t, shown{app.appID, "file"}, s["app_id"], "each setting on its own")

	s = show("--base-url", srv.url, "--api-key", app.apiKey, "--app-id", "app_flag")
	assert.Equal(t, shown{srv.url, "flag"}, s["base_url"])
	assert.Equal(t, shown{"app_flag", "flag"}, s["app_id"])

	// And in effect: the env's wrong key loses to the flag's right one.
	e.vars["XPROMO_BASE_URL"] = srv.url
	e.fails(3, "unauthorized", "apps", "score")
	e.ok("apps", "score", "--api-key", app.apiKey)

	// No secret is ever printed by config show.
	out := e.ok("config", "show").stdout
	assert.NotContains(t, out, app.apiKey)
	assert.NotContains(t, out, "fromtheenvironment")
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	assert.NotContains(t, e.ok("config", "show").stdout, adminToken)
	assert.Equal(t, "****  (env)", field(e.ok("config", "show").stdout, "admin_token"))
}
