package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/xpromo/xpromo/cli/internal/config"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// load reads the config file and resolves the settings, once.
func (r *runner) load() error {
	if r.loaded {
		return nil
	}
	path, err := config.Path(r.env.Getenv, r.env.UserConfigDir)
	if err != nil {
		return localErr(codeConfig, ExitUsage, "%v", err)
	}
	f, loose, err := config.Load(path)
	if err != nil {
		return localErr(codeConfig, ExitOther, "%v", err)
	}
	if loose {
		fmt.Fprintf(r.env.Stderr, "warning: %s is readable by others and holds API keys; run: chmod 600 %s\n", path, path)
	}
	r.cfgPath, r.file, r.loaded = path, f, true
	r.settings = config.Resolve(config.Flags{
		Profile: r.g.profile, BaseURL: r.g.baseURL, APIKey: r.g.apiKey,
		AdminToken: r.g.adminToken, AppID: r.g.appID,
	}, r.env.Getenv, f)
	return nil
}

// newClient builds the SDK client from the settings, with the API key and
// admin token when there are any.
func (r *runner) newClient() (*xpromo.Client, error) {
	if err := r.load(); err != nil {
		return nil, err
	}
	s := r.settings
	if r.g.retries < 0 {
		return nil, usageErr("--retries must be 0 or more")
	}
	opts := []xpromo.Option{
		xpromo.WithHTTPClient(&http.Client{Timeout: xpromo.DefaultTimeout, Transport: r.rec}),
		xpromo.WithUserAgent("xpromo-cli/" + Version),
		xpromo.WithRetries(r.g.retries),
	}
	if s.APIKey.Value != "" {
		opts = append(opts, xpromo.WithAPIKey(s.APIKey.Value))
	}
	if s.AdminToken.Value != "" {
		opts = append(opts, xpromo.WithAdminToken(s.AdminToken.Value))
	}
	opts = append(opts, r.env.ClientOptions...)
	c := xpromo.NewClient(s.BaseURL.Value, opts...)
	if c.BaseURL() == "" {
		return nil, usageErr("base URL %q (from %s) must be absolute, http or https, like %s", s.BaseURL.Value, s.BaseURL.Source, config.DefaultBaseURL)
	}
	return c, nil
}

// publicClient is for the endpoints that need no credential.
func (r *runner) publicClient() (*xpromo.Client, error) { return r.newClient() }

// keyClient is for endpoints acting with the app's API key.
func (r *runner) keyClient() (*xpromo.Client, error) {
	c, err := r.newClient()
	if err != nil {
		return nil, err
	}
	if r.settings.APIKey.Value == "" {
		return nil, localErr(codeMissingAPIKey, ExitAuth,
			"no API key in profile %q: pass --api-key, set XPROMO_API_KEY, or register an app with `xpromo apps register`", r.settings.Profile.Value)
	}
	return c, nil
}

// appClient is keyClient plus the app the command acts on.
func (r *runner) appClient() (*xpromo.Client, string, error) {
	c, err := r.keyClient()
	if err != nil {
		return nil, "", err
	}
	if r.settings.AppID.Value == "" {
		return nil, "", localErr(codeMissingAppID, ExitUsage,
			"no app id in profile %q: pass --app-id, set XPROMO_APP_ID, or register an app with `xpromo apps register`", r.settings.Profile.Value)
	}
	return c, r.settings.AppID.Value, nil
}

// adminClient is for the operators' surface.
func (r *runner) adminClient() (*xpromo.Client, error) {
	c, err := r.newClient()
	if err != nil {
		return nil, err
	}
	if r.settings.AdminToken.Value == "" {
		return nil, localErr(codeMissingAdminToken, ExitAuth,
			"no admin token: pass --admin-token, set XPROMO_ADMIN_TOKEN, or `xpromo config set admin_token -`")
	}
	return c, nil
}

// saveProfile applies change to the profile in use and writes the config
// file.
func (r *runner) saveProfile(change func(p *config.Profile)) error {
	if err := r.load(); err != nil {
		return err
	}
	name := r.settings.Profile.Value
	p := r.file.Profiles[name]
	change(&p)
	r.file.Profiles[name] = p
	if err := r.file.Save(r.cfgPath); err != nil {
		return localErr(codeConfig, ExitOther, "%v", err)
	}
	return nil
}

// recorder is the CLI's HTTP transport: it keeps the body of the last
// response it carried, so that --json prints the API's answer byte for byte
// while the SDK client decodes it (and handles errors and retries) as usual.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	last *bytes.Buffer
}

func (t *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	buf := new(bytes.Buffer)
	t.mu.Lock()
	t.last = buf
	t.mu.Unlock()
	resp.Body = &teeBody{Reader: io.TeeReader(resp.Body, buf), Closer: resp.Body}
	return resp, nil
}

// lastBody returns the body of the last response (as read by the client).
func (t *recorder) lastBody() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return nil
	}
	return bytes.Clone(t.last.Bytes())
}

type teeBody struct {
	io.Reader
	io.Closer
}

// writeRaw prints the last answer as the server sent it (--json), ending
// with a newline.
func (r *runner) writeRaw() error {
	body := r.rec.lastBody()
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	_, err := r.env.Stdout.Write(body)
	return err
}
