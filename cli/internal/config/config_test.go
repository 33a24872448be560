package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolvePrecedence(t *testing.T) {
	file := &File{Profiles: map[string]Profile{
		"default": {BaseURL: "http://file", AppID: "app_file", APIKey: "key_file", AdminToken: "tok_file"},
		"work":    {BaseURL: "http://work", AppID: "app_work"},
	}}
	cases := []struct {
		name  string
		flags Flags
		env   map[string]string
		want  Settings
	}{
		{
			name: "file",
			want: Settings{
				Profile: Setting{"default", SourceDefault}, BaseURL: Setting{"http://file", SourceFile},
				APIKey: Setting{"key_file", SourceFile}, AdminToken: Setting{"tok_file", SourceFile}, AppID: Setting{"app_file", SourceFile},
			},
		},
		{
			name: "env over file, setting by setting",
			env:  map[string]string{EnvBaseURL: "http://env", EnvAPIKey: "key_env"},
			want: Settings{
				Profile: Setting{"default", SourceDefault}, BaseURL: Setting{"http://env", SourceEnv},
				APIKey: Setting{"key_env", SourceEnv}, AdminToken: Setting{"tok_file", SourceFile}, AppID: Setting{"app_file", SourceFile},
			},
		},
		{
			name:  "flag over env",
			flags: Flags{BaseURL: "http://flag", AppID: "app_flag", AdminToken: "tok_flag"},
			env:   map[string]string{EnvBaseURL: "http://env", EnvAppID: "app_env", EnvAdminToken: "tok_env"},
			want: Settings{
				Profile: Setting{"default", SourceDefault}, BaseURL: Setting{"http://flag", SourceFlag},
				APIKey: Setting{"key_file", SourceFile}, AdminToken: Setting{"tok_flag", SourceFlag}, AppID: Setting{"app_flag", SourceFlag},
			},
		},
		{
			name: "profile from env; defaults fill the gaps",
			env:  map[string]string{EnvProfile: "work"},
			want: Settings{
				Profile: Setting{"work", SourceEnv}, BaseURL: Setting{"http://work", SourceFile}, AppID: Setting{"app_work", SourceFile},
			},
		},
		{
			name:  "profile flag over env; unknown profile: only the default base URL",
			flags: Flags{Profile: "nobody"},
			env:   map[string]string{EnvProfile: "work"},
			want:  Settings{Profile: Setting{"nobody", SourceFlag}, BaseURL: Setting{DefaultBaseURL, SourceDefault}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Resolve(c.flags, envOf(c.env), file))
		})
	}
	assert.Equal(t, Setting{DefaultBaseURL, SourceDefault}, Resolve(Flags{}, envOf(nil), nil).BaseURL, "no file at all")
}

func TestPath(t *testing.T) {
	p, err := Path(envOf(map[string]string{EnvConfig: "/x/y.json"}), func() (string, error) { panic("not asked") })
	require.NoError(t, err)
	assert.Equal(t, "/x/y.json", p)
	p, err = Path(envOf(nil), func() (string, error) { return "/home/me/.config", nil })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/home/me/.config", "xpromo", "config.json"), p)
	_, err = Path(envOf(nil), func() (string, error) { return "", errors.New("no HOME") })
	assert.ErrorContains(t, err, EnvConfig)
}

func TestSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "xpromo")
	path := filepath.Join(dir, "config.json")

	f, loose, err := Load(path)
	require.NoError(t, err, "a missing file is an empty config")
	assert.False(t, loose)
	assert.Empty(t, f.Profiles)

	f.Profiles["default"] = Profile{BaseURL: "http://x", APIKey: "xp_test_secret"}
	require.NoError(t, f.Save(path))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	dst, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dst.Mode().Perm())

	// Saving again replaces the file (still 0600) and leaves no temporary
	// file behind.
	f.Profiles["b"] = Profile{AppID: "app_b"}
	require.NoError(t, f.Save(path))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	got, loose, err := Load(path)
	require.NoError(t, err)
	assert.False(t, loose)
	assert.Equal(t, f.Profiles, got.Profiles)
	assert.Equal(t, []string{"b", "default"}, got.Names())

	// An existing directory's mode is left alone.
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o755))
	require.NoError(t, f.Save(filepath.Join(shared, "c.json")))
	sst, err := os.Stat(shared)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), sst.Mode().Perm())

	require.NoError(t, os.Chmod(path, 0o640))
	_, loose, err = Load(path)
	require.NoError(t, err)
	assert.True(t, loose, "group-readable is loose")

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	_, _, err = Load(path)
	assert.ErrorContains(t, err, "not valid JSON")
}

func TestMask(t *testing.T) {
	assert.Equal(t, "", Mask(""))
	assert.Equal(t, "xp_test_AbCd…", Mask("xp_test_AbCdEfGhIjKlMnOpQrStUvWxYz012345"))
	assert.Equal(t, "xp_live_AbCd…", Mask("xp_live_AbCdEfGhIjKlMnOpQrStUvWxYz012345"))
	assert.Equal(t, "****", Mask("an-admin-token-0123456789"), "other secrets show nothing")
	assert.Equal(t, "****", Mask("xp_test_short"), "too short to show a prefix safely")
}
