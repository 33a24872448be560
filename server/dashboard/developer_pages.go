package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/webhooks"
)

// The developers screen: API keys (rotation shows the new key once), SDK
// keys, webhook endpoints with their attempts and redelivery, and the
// events.

var eventTypes = []xpromo.EventType{xpromo.EventChainStateChanged, xpromo.EventChainCleared, xpromo.EventChainRejected,
	xpromo.EventFraudFlagged, xpromo.EventPayoutSent, xpromo.EventScoreUpdated}

type developersData struct {
	Keys       []apps.KeyInfo
	SDKKeys    []attribution.SDKKey
	Endpoints  []xpromo.WebhookEndpoint
	EventTypes []xpromo.EventType
	RotateKey  string
	CreateKey  string
	// Shown once, in the answer of the POST that made them.
	NewAPIKey      string
	PreviousExpiry time.Time
	NewSecret      string
}

func (d *Dashboard) developersData(r *http.Request) (developersData, error) {
	ctx, id := r.Context(), appID(r)
	out := developersData{EventTypes: eventTypes, RotateKey: newFormKey(), CreateKey: newFormKey()}
	var err error
	if out.Keys, err = d.cfg.Services.Apps.APIKeys(ctx, id); err != nil {
		return out, err
	}
	if out.SDKKeys, err = d.cfg.Services.Attribution.SDKKeys(ctx, id); err != nil {
		return out, err
	}
	out.Endpoints, err = d.cfg.Services.Webhooks.Endpoints(ctx, id)
	return out, err
}

func (d *Dashboard) developers(w http.ResponseWriter, r *http.Request) {
	data, err := d.developersData(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "developers", viewOf("Developers", "developers", data))
}

// rotateKey issues a new API key and shows it in this answer only (a
// repeat of the same form replays this answer, as the API's does).
func (d *Dashboard) rotateKey(w http.ResponseWriter, r *http.Request) {
	key, expires, err := d.cfg.Services.Apps.RotateKey(r.Context(), appID(r))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, err := d.developersData(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.NewAPIKey, data.PreviousExpiry = key, expires
	d.render(w, r, http.StatusOK, "developers", viewOf("Developers", "developers", data))
}

// createEndpoint registers a webhook endpoint and shows its signing secret
// in this answer only.
func (d *Dashboard) createEndpoint(w http.ResponseWriter, r *http.Request) {
	req := xpromo.CreateWebhookEndpointRequest{URL: strings.TrimSpace(r.PostForm.Get("url")), Description: r.PostForm.Get("description")}
	for _, t := range r.PostForm["event"] {
		req.Events = append(req.Events, xpromo.EventType(t))
	}
	ep, err := d.cfg.Services.Webhooks.CreateEndpoint(r.Context(), appID(r), req)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, err := d.developersData(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data.NewSecret = ep.Secret
	d.render(w, r, http.StatusCreated, "developers", viewOf("Developers", "developers", data))
}

type endpointData struct {
	Endpoint     xpromo.WebhookEndpoint
	Attempts     []xpromo.WebhookAttempt
	Next         string
	RedeliverKey string
	Events       []xpromo.Event
}

func (d *Dashboard) endpoint(w http.ResponseWriter, r *http.Request) {
	ctx, id, epID := r.Context(), appID(r), chi.URLParam(r, "endpoint_id")
	ep, err := d.cfg.Services.Webhooks.Endpoint(ctx, id, epID)
	if err != nil {
		d.fail(w, r, err) // another app's endpoint is not_found
		return
	}
	cur := r.URL.Query().Get("cursor")
	if len(cur) > 256 {
		cur = ""
	}
	page, err := d.cfg.Services.Webhooks.Attempts(ctx, id, epID, "", cur, 50)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	events, err := d.cfg.Services.Webhooks.ListEvents(ctx, id, webhooks.EventParams{Limit: 100})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := endpointData{Endpoint: ep, Attempts: page.Attempts, RedeliverKey: newFormKey(), Events: events.Events}
	if page.NextCursor != nil {
		data.Next = url.Values{"cursor": {*page.NextCursor}}.Encode()
	}
	d.render(w, r, http.StatusOK, "endpoint", viewOf("Webhook endpoint", "developers", data))
}

// maxEventIDBytes bounds the redelivery form's event id.
const maxEventIDBytes = 64

func (d *Dashboard) redeliver(w http.ResponseWriter, r *http.Request) {
	epID, eventID := chi.URLParam(r, "endpoint_id"), r.PostForm.Get("event_id")
	if len(eventID) > maxEventIDBytes {
		eventID = ""
	}
	if _, err := d.cfg.Services.Webhooks.Redeliver(r.Context(), appID(r), epID, eventID); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/developers/webhooks/"+url.PathEscape(epID)+"?done=redelivered", http.StatusSeeOther)
}
