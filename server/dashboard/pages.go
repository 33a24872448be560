package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/dashboard/session"
)

//go:embed templates
var templateFS embed.FS

// pages are the parsed templates: each page is the layout plus its own
// file, so every page defines "content" without clashing.
type pages struct{ byName map[string]*template.Template }

var funcs = template.FuncMap{
	"eur":  eur,
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"timep": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"eurp":    func(c *int64) string { return eur(*c) },
	"pct":     func(f float64) float64 { return f * 100 },
	"contrib": func(v, weight int) float64 { return float64(v*weight) / 100 },
	"signed": func(c int64) string {
		if c > 0 {
			return "+" + fmt.Sprint(c)
		}
		return fmt.Sprint(c)
	},
}

// eur formats cents as the API's docs do: "EUR 4.00", "EUR -1.20".
func eur(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("EUR %s%d.%02d", sign, cents/100, cents%100)
}

func mustParsePages() *pages {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		p.byName[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return p
}

// view is what every page's template gets.
type view struct {
	Title    string
	TestMode bool
	Session  *session.Session
	AppName  string // the signed-in app's name
	Active   string // the navigation entry to mark
	Notice   string // a one-line result of the last action
	Error    string
	Data     any
}

// navItem is one entry of the navigation.
type navItem struct{ Key, Label, Href string }

var appNav = []navItem{
	{"overview", "Overview", Prefix + "/"},
	{"installs", "Installs", Prefix + "/installs"},
	{"money", "Money", Prefix + "/money"},
	{"campaigns", "Campaigns", Prefix + "/campaigns"},
	{"score", "Score", Prefix + "/score"},
	{"developers", "Developers", Prefix + "/developers"},
}

var operatorNav = []navItem{
	{"review", "Review queue", Prefix + "/operator/review"},
	{"complaints", "Complaints", Prefix + "/operator/complaints"},
	{"audit", "Audit log", Prefix + "/operator/audit"},
	{"network", "Network", Prefix + "/operator/network"},
}

// Nav is the navigation of the view's role.
func (v view) Nav() []navItem {
	switch {
	case v.Session == nil:
		return nil
	case v.Session.Role == session.RoleOperator:
		return operatorNav
	default:
		return appNav
	}
}

// render writes the page name with status; a template error is logged and
// answered 500 with a plain message (nothing half-written).
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	t, ok := d.pages.byName[name]
	if !ok {
		panic("dashboard: no page " + name)
	}
	v.TestMode = d.testMode()
	if v.Session == nil {
		if s, ok := sessionFrom(r); ok {
			v.Session = &s
		}
	}
	if v.Session != nil && v.Session.Role == session.RoleApp && v.AppName == "" {
		if a, err := d.cfg.Services.Apps.App(r.Context(), v.Session.AppID); err == nil {
			v.AppName = a.Name
		}
	}
	if v.Notice == "" {
		v.Notice = noticeText(r.URL.Query())
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		d.log.ErrorContext(r.Context(), "dashboard: rendering a page failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (d *Dashboard) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", view{Title: http.StatusText(status), Data: msg})
}

// notices are the results an action redirects with (?done=…), so that the
// page after a POST says what happened; only these fixed texts (and the
// sweep's counts, as numbers) are shown.
var notices = map[string]string{
	"topup":       "Top-up done: the ledger shows it below.",
	"signedout":   "You are signed out.",
	"approve":     "Approved.",
	"reject":      "Rejected.",
	"suspend":     "Suspended.",
	"reinstate":   "Reinstated.",
	"review":      "Sent back to review: the gate runs again.",
	"resolved":    "Complaint resolved.",
	"clock":       "The test clock moved.",
	"created":     "Campaign created.",
	"redelivered": "Redelivery queued: its attempt appears below once made.",
	"earnmode":    "Earn mode changed: it applies to installs cleared from now on.",
	"payout":      "Payout sent: the ledger shows its line below.",
	"saved":       "Campaign saved.",
	"paused":      "Campaign paused.",
	"resumed":     "Campaign resumed.",
}

func noticeText(q url.Values) string {
	if q.Get("done") == "sweep" {
		n := func(k string) int { v, _ := strconv.Atoi(q.Get(k)); return v }
		return fmt.Sprintf("Sweep done: %d cleared, %d refunded, %d failed.", n("cleared"), n("refunded"), n("failed"))
	}
	return notices[q.Get("done")]
}
