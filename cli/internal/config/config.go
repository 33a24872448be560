// Package config is the CLI's settings: named profiles in a JSON file
// (0600, in a 0700 directory), and the precedence that picks each setting
// from a flag, the environment, the file or a default.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Environment variables the CLI reads.
const (
	EnvConfig     = "XPROMO_CONFIG"      // path of the config file
	EnvProfile    = "XPROMO_PROFILE"     // profile name
	EnvBaseURL    = "XPROMO_BASE_URL"    // server root, e.g. http://127.0.0.1:8080
	EnvAPIKey     = "XPROMO_API_KEY"     // the app's API key
	EnvAdminToken = "XPROMO_ADMIN_TOKEN" // the operators' token
	EnvAppID      = "XPROMO_APP_ID"      // the app the commands act on
)

// DefaultProfile is the profile used when none is named.
const DefaultProfile = "default"

// DefaultBaseURL is the server `make run` starts.
const DefaultBaseURL = "http://127.0.0.1:8080"

// File and directory modes: the file holds API keys.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// Profile is one named set of settings.
type Profile struct {
	BaseURL    string `json:"base_url,omitempty"`
	AppID      string `json:"app_id,omitempty"`
	APIKey     string `json:"api_key,omitempty"`
	AdminToken string `json:"admin_token,omitempty"`
	// ScoringJobID is the scoring job of the registration, followed by
	// `apps score --watch`.
	ScoringJobID string `json:"scoring_job_id,omitempty"`
}

// File is the config file.
type File struct {
	Profiles map[string]Profile `json:"profiles"`
}

// Names returns the profile names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Profiles))
	for n := range f.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Path is where the config file lives: $XPROMO_CONFIG, else
// <user config dir>/xpromo/config.json.
func Path(getenv func(string) string, userConfigDir func() (string, error)) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return p, nil
	}
	dir, err := userConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory (set %s to a file path): %w", EnvConfig, err)
	}
	return filepath.Join(dir, "xpromo", "config.json"), nil
}

// Load reads the config file at path. A missing file is an empty config.
// loose is true when the file is readable or writable by others than its
// owner (the caller warns: it holds keys).
func Load(path string) (f *File, loose bool, err error) {
	f = &File{Profiles: map[string]Profile{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading config: %w", err)
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, false, fmt.Errorf("config file %s is not valid JSON: %w", path, err)
	}
	if f.Profiles == nil {
		f.Profiles = map[string]Profile{}
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		loose = true
	}
	return f, loose, nil
}

// Save writes f to path atomically (a temporary file renamed over it), mode
// 0600. A missing directory is created 0700; an existing one is left as it
// is (XPROMO_CONFIG may point into a shared directory).
func (f *File) Save(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return fmt.Errorf("creating config directory: %w", err)
		}
		// MkdirAll applies the umask; the directory is ours, make it 0700.
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("creating config directory: %w", err)
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if err := tmp.Chmod(FileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return nil
}

// Source says where a setting came from.
type Source string

// Sources, by precedence.
const (
	SourceFlag    Source = "flag"
	SourceEnv     Source = "env"
	SourceFile    Source = "file"
	SourceDefault Source = "default"
	SourceNone    Source = ""
)

// Setting is a resolved value and its source.
type Setting struct {
	Value  string
	Source Source
}

// Settings are the resolved settings of one invocation.
type Settings struct {
	// Profile is the profile name in use.
	Profile    Setting
	BaseURL    Setting
	APIKey     Setting
	AdminToken Setting
	AppID      Setting
}

// Flags are the values given on the command line ("" = not given).
type Flags struct {
	Profile, BaseURL, APIKey, AdminToken, AppID string
}

// ProfileName picks the profile: flag, then $XPROMO_PROFILE, then "default".
func ProfileName(flag string, getenv func(string) string) Setting {
	return pick(flag, getenv(EnvProfile), "", DefaultProfile)
}

// Resolve picks each setting: flag, then environment, then the profile in
// the file, then the default (only the base URL has one).
func Resolve(flags Flags, getenv func(string) string, f *File) Settings {
	s := Settings{Profile: ProfileName(flags.Profile, getenv)}
	var p Profile
	if f != nil {
		p = f.Profiles[s.Profile.Value]
	}
	s.BaseURL = pick(flags.BaseURL, getenv(EnvBaseURL), p.BaseURL, DefaultBaseURL)
	s.APIKey = pick(flags.APIKey, getenv(EnvAPIKey), p.APIKey, "")
	s.AdminToken = pick(flags.AdminToken, getenv(EnvAdminToken), p.AdminToken, "")
	s.AppID = pick(flags.AppID, getenv(EnvAppID), p.AppID, "")
	return s
}

func pick(flag, env, file, def string) Setting {
	switch {
	case flag != "":
		return Setting{flag, SourceFlag}
	case env != "":
		return Setting{env, SourceEnv}
	case file != "":
		return Setting{file, SourceFile}
	case def != "":
		return Setting{def, SourceDefault}
	}
	return Setting{}
}

// Mask shows enough of a secret to tell it apart and no more: an API key's
// first 12 characters (the display prefix the server shows operators, e.g.
// "xp_test_AbCd"), anything else only as "****". "" stays "".
func Mask(secret string) string {
	switch {
	case secret == "":
		return ""
	case len(secret) > 16 && (strings.HasPrefix(secret, "xp_test_") || strings.HasPrefix(secret, "xp_live_")):
		return secret[:12] + "…"
	}
	return "****"
}
