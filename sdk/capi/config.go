//go:build cgo

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// config is xpromo_agent_new's JSON: slots.Config as a C app can give it
// (xpromo.h documents each member).
type config struct {
	BaseURL          string    `json:"base_url"`
	AppID            string    `json:"app_id"`
	SDKKeyPEM        string    `json:"sdk_key_pem"`
	DataDir          string    `json:"data_dir"`
	Platform         string    `json:"platform"`
	Locale           string    `json:"locale"`
	InboxDir         string    `json:"inbox_dir"`
	DownloadDirs     *[]string `json:"download_dirs"`
	InstalledPath    string    `json:"installed_path"`
	HeartbeatEveryMS int64     `json:"heartbeat_every_ms"`
	SendTimeoutMS    int64     `json:"send_timeout_ms"`
}

// Bounds of the durations: a day of heartbeats is the longest period that
// still lands one in the 48-72 h window; a report should not wait longer
// than ten minutes to give up on the network.
const (
	maxHeartbeatEvery = 24 * time.Hour
	maxSendTimeout    = 10 * time.Minute
)

// parseConfig reads and checks the JSON configuration; the rest (the
// clock, the logger) is the agent's.
func parseConfig(b []byte) (slots.Config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return slots.Config{}, invalidArgument("config: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return slots.Config{}, invalidArgument("config: data after the JSON object")
	}
	switch {
	case c.BaseURL == "":
		return slots.Config{}, invalidArgument("config: base_url is required")
	case c.AppID == "":
		return slots.Config{}, invalidArgument("config: app_id is required")
	case !attribution.ValidIdentifier(c.AppID):
		return slots.Config{}, invalidArgument("config: app_id %q is not an app id", c.AppID)
	case c.SDKKeyPEM == "":
		return slots.Config{}, invalidArgument("config: sdk_key_pem is required (the app's SDK private key)")
	case c.DataDir == "":
		return slots.Config{}, invalidArgument("config: data_dir is required")
	case c.Platform != "" && !xpromo.Platform(c.Platform).Valid():
		return slots.Config{}, invalidArgument("config: platform %q is not mac or win", c.Platform)
	case c.Locale != "" && !attribution.ValidLocale(c.Locale):
		return slots.Config{}, invalidArgument("config: locale %q is not a BCP 47 language tag of at most %d characters", c.Locale, attribution.MaxLocaleLen)
	case c.HeartbeatEveryMS < 0 || time.Duration(c.HeartbeatEveryMS)*time.Millisecond > maxHeartbeatEvery:
		return slots.Config{}, invalidArgument("config: heartbeat_every_ms must be 0 (the default) to %d", maxHeartbeatEvery.Milliseconds())
	case c.SendTimeoutMS < 0 || time.Duration(c.SendTimeoutMS)*time.Millisecond > maxSendTimeout:
		return slots.Config{}, invalidArgument("config: send_timeout_ms must be 0 (the default) to %d", maxSendTimeout.Milliseconds())
	}
	priv, err := attribution.ParsePrivateKey([]byte(c.SDKKeyPEM))
	if err != nil {
		return slots.Config{}, invalidArgument("config: sdk_key_pem: %v", err)
	}
	key, err := attribution.KeyPairFromPrivate(priv)
	if err != nil {
		return slots.Config{}, invalidArgument("config: sdk_key_pem: %v", err)
	}
	cfg := slots.Config{
		BaseURL:        c.BaseURL,
		AppID:          c.AppID,
		Key:            key,
		DataDir:        c.DataDir,
		Platform:       xpromo.Platform(c.Platform),
		Locale:         c.Locale,
		InboxDir:       c.InboxDir,
		InstalledPath:  c.InstalledPath,
		HeartbeatEvery: time.Duration(c.HeartbeatEveryMS) * time.Millisecond,
		SendTimeout:    time.Duration(c.SendTimeoutMS) * time.Millisecond,
	}
	if c.DownloadDirs != nil {
		cfg.DownloadDirs = append([]string{}, *c.DownloadDirs...)
	}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = slots.DefaultSendTimeout
	}
	return cfg, nil
}
