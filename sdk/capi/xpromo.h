/*
 * xpromo.h: the xpromo in-app SDK for apps not written in Go (Swift,
 * Objective-C, C#, C++, C). It is the C ABI of the Go SDK (sdk/slots), built
 * as a shared library (libxpromo.so, xpromo.dll with its import library
 * xpromo.lib, libxpromo.dylib) or a static archive (libxpromo.a, what the
 * macOS XCFramework holds). docs/capi.md is the guide.
 *
 * Conventions
 *
 *  - Strings are NUL-terminated UTF-8. Structured values (the configuration,
 *    an ad, the install state) are JSON objects, documented at each function.
 *  - Handles (xpromo_agent, xpromo_placement) are opaque non-zero integers;
 *    0 is never a handle. A handle that is unknown, freed, or of the other
 *    kind is refused with XPROMO_ERR_BAD_HANDLE, never a crash.
 *  - Ownership: every char * and xpromo_error * the library returns through
 *    an out parameter belongs to the caller, who frees it with
 *    xpromo_string_free or xpromo_error_free (never with free(): on Windows
 *    the DLL and the app may use different C runtimes). Strings passed in are
 *    only read during the call. Out parameters are set to NULL/0 when the call
 *    has nothing to return in them.
 *  - Errors: each fallible function returns an xpromo_status, and when it is
 *    not XPROMO_OK and err is not NULL, *err receives the details (a stable
 *    code and a message). err may be NULL when the caller needs no details.
 *  - No Go panic crosses this boundary: one is recovered and answered
 *    XPROMO_ERR_INTERNAL.
 *  - Thread safety: every function may be called from any thread, and
 *    concurrently on the same agent, except that a handle must not be used
 *    after (or while) it is freed. Calls that talk to the server block the
 *    calling thread (at most the configured send timeout for the reports);
 *    call them off the UI thread. Callbacks: see each typedef.
 */
#ifndef XPROMO_H
#define XPROMO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && !defined(XPROMO_STATIC)
#define XPROMO_API __declspec(dllimport)
#else
#define XPROMO_API
#endif

/* The version of this ABI: a new function raises the minor version, a
 * changed or removed one the major version. */
#define XPROMO_ABI_VERSION_MAJOR 1
#define XPROMO_ABI_VERSION_MINOR 0

/* Status of a call. Negative values are errors. */
typedef int32_t xpromo_status;
#define XPROMO_OK 0
/* xpromo_fill and xpromo_show: the server has nothing for the slot. An
 * ordinary outcome: show nothing. */
#define XPROMO_NO_FILL 1
/* A NULL pointer where one is required, JSON that does not parse or has
 * unknown members, a configuration value out of range, an unknown slot. */
#define XPROMO_ERR_INVALID_ARGUMENT (-1)
/* An unknown or freed handle, or a handle of the other kind. */
#define XPROMO_ERR_BAD_HANDLE (-2)
/* The server answered with an error: err->code is the server's stable code
 * (docs/errors.md), err->http_status its status. A refusal (403 fraud_*,
 * 409, 422) is final; the event left the queue. */
#define XPROMO_ERR_SERVER (-3)
/* No answer from the server in time (offline, timeout; err->code
 * "network"), or a 5xx or 429 still failing after the retries (err->code
 * and http_status the server's): queued events stay in the offline queue
 * and are sent later. */
#define XPROMO_ERR_NETWORK (-4)
/* xpromo_placement_click after the offer lapsed (15 minutes after the
 * fill): fill the slot again. */
#define XPROMO_ERR_OFFER_EXPIRED (-5)
/* xpromo_heartbeat: this install has no chain that wants heartbeats. */
#define XPROMO_ERR_NO_CHAIN (-6)
/* xpromo_agent_new: another process holds the data directory. */
#define XPROMO_ERR_DATA_DIR_IN_USE (-7)
/* The offline queue holds its maximum of events. */
#define XPROMO_ERR_QUEUE_FULL (-8)
/* xpromo_show: the render callback returned no XPROMO_OUTCOME_* value. */
#define XPROMO_ERR_RENDER (-9)
/* Anything else, e.g. the data directory cannot be written. */
#define XPROMO_ERR_FAILED (-10)
/* A bug in the library (a recovered Go panic). */
#define XPROMO_ERR_INTERNAL (-99)

/* What became of a rendered ad (the render callback's answer). */
#define XPROMO_OUTCOME_NOT_SHOWN 0 /* the app did not show it */
#define XPROMO_OUTCOME_DISMISSED 1 /* shown, closed without a click */
#define XPROMO_OUTCOME_CLICKED 2   /* the user clicked its call to action */

/* Log levels (those of Go's log/slog). */
#define XPROMO_LOG_DEBUG (-4)
#define XPROMO_LOG_INFO 0
#define XPROMO_LOG_WARN 4
#define XPROMO_LOG_ERROR 8

/* An agent: the SDK of one app (one per process and data directory). */
typedef uint64_t xpromo_agent;
/* A filled slot: the ad to render and the offer signed on a click. */
typedef uint64_t xpromo_placement;

/* The details of a failed call. Free with xpromo_error_free. */
typedef struct xpromo_error {
	/* The status the call returned. */
	xpromo_status status;
	/* The HTTP status of the server's answer (XPROMO_ERR_SERVER), else 0. */
	int32_t http_status;
	/* Stable code, never NULL: the server's code (e.g. "fraud_token_expired")
	 * for XPROMO_ERR_SERVER; else one of "invalid_argument", "bad_handle",
	 * "network", "offer_expired", "no_chain", "data_dir_in_use",
	 * "queue_full", "render_failed", "failed", "internal", or the no-fill
	 * reason for XPROMO_NO_FILL. */
	char *code;
	/* Human-readable, never NULL; may change between versions. */
	char *message;
} xpromo_error;

/*
 * Logging callback: one line of what the SDK does not return as an error
 * (a refused event, a failed inbox write), level XPROMO_LOG_*, message
 * "msg key=value ..." (valid during the call only). It is called from any
 * thread, the SDK's background threads included, possibly concurrently:
 * it must be thread-safe and return quickly. Lines below the level given to
 * xpromo_set_logger are not passed.
 */
typedef void (*xpromo_log_fn)(void *user_data, int32_t level, const char *message);

/*
 * Clock callback: the current time in milliseconds since 1970-01-01 UTC.
 * Everything the SDK signs is dated with it. Called from any thread.
 */
typedef int64_t (*xpromo_clock_fn)(void *user_data);

/*
 * Render hook of xpromo_show: show the ad (ad_json, valid during the call:
 * see xpromo_fill) in the app's own native template with its visible
 * "Sponsored" label, wait for the user, and return an XPROMO_OUTCOME_*.
 * Called on the thread that called xpromo_show, which it blocks: dispatch
 * to the UI thread and wait there. Stop showing the ad at its expires_at.
 * For the before_quit slot, never hold up quitting.
 */
typedef int32_t (*xpromo_render_fn)(void *user_data, const char *ad_json);

/* The functions. (XPROMO_NO_PROTOTYPES is for the library's own build,
 * whose generated declarations cannot say const.) */
#ifndef XPROMO_NO_PROTOTYPES

/* The library's version, e.g. "1.0.0 (go1.26.8)". Static: do not free. */
XPROMO_API const char *xpromo_version(void);

/* Free a string the library returned. NULL is allowed. */
XPROMO_API void xpromo_string_free(char *s);

/* Free an error the library returned. NULL is allowed. */
XPROMO_API void xpromo_error_free(xpromo_error *err);

/*
 * Open the SDK of one app. config_json, members (unknown members refused):
 *
 *   "base_url"            required  the xpromo server's root, "https://api.xpromo.example"
 *   "app_id"              required  this app's app_id
 *   "sdk_key_pem"         required  the app's SDK private key: PEM, PKCS #8
 *                                   Ed25519 (`xpromo keys sdk new`)
 *   "data_dir"            required  a directory private to this app: device id,
 *                                   install state, offline queue (created when missing)
 *   "platform"            "mac" or "win"; default from the OS
 *   "locale"              BCP 47 tag sent (and signed) with fills, e.g. "de-CH"
 *   "inbox_dir"           the handoff inbox shared by the user's apps; default
 *                         the per-user one, "-" turns the channel off
 *   "download_dirs"       array of directories searched for the download that
 *                         installed the app; default the user's Downloads; [] none
 *   "installed_path"      this app as installed (the .app bundle, the .exe);
 *                         default from the executable
 *   "heartbeat_every_ms"  background heartbeat period; default 3600000 (1 hour),
 *                         at most 86400000
 *   "send_timeout_ms"     bound of each call that talks to the server (a fill,
 *                         the delivery attempt of a report, a flush); default
 *                         10000, at most 600000
 *
 * It does no network I/O. On success *out is the agent; free it with
 * xpromo_agent_free.
 */
XPROMO_API xpromo_status xpromo_agent_new(const char *config_json, xpromo_agent *out, xpromo_error **err);

/*
 * Stop the agent's background work, close its offline queue (queued events
 * are sent after the next xpromo_agent_new) and release the data directory.
 * Placements of the agent become bad handles too; free them all the same.
 * Any other call on the agent must have returned.
 */
XPROMO_API xpromo_status xpromo_agent_free(xpromo_agent agent, xpromo_error **err);

/* Receive the agent's log lines at or above min_level (an XPROMO_LOG_*).
 * fn NULL turns logging off (the default). */
XPROMO_API xpromo_status xpromo_set_logger(xpromo_agent agent, xpromo_log_fn fn, void *user_data, int32_t min_level, xpromo_error **err);

/* Replace the agent's clock (default: the system clock). fn NULL restores
 * the system clock. */
XPROMO_API xpromo_status xpromo_set_clock(xpromo_agent agent, xpromo_clock_fn fn, void *user_data, xpromo_error **err);

/*
 * Start the agent's background work until xpromo_agent_free: deliver the
 * queued events as soon as the network allows (with backoff), and send a
 * heartbeat every heartbeat_every_ms while the install's chain wants them.
 * Optional: without it, events are sent by xpromo_placement_click,
 * xpromo_claim_install, xpromo_heartbeat and xpromo_flush. A second call
 * does nothing.
 */
XPROMO_API xpromo_status xpromo_agent_start(xpromo_agent agent, xpromo_error **err);

/* The agent's opaque device id ("dev_..."), in *out. */
XPROMO_API xpromo_status xpromo_device_id(xpromo_agent agent, char **out, xpromo_error **err);

/*
 * Publisher: ask the server for an ad for slot ("onboarding_complete",
 * "update_installed", "about_window", "settings_idle", "before_quit"), with
 * a request signed by the app's SDK key. There is no separate impression
 * call: the server counts each fill as the impression, so fill only when
 * the slot is about to be shown.
 *
 * XPROMO_OK: *placement is the filled slot (free it with
 * xpromo_placement_free) and *ad_json the ad:
 *   {"slot","title","icon_url","description","cta","sponsored_label",
 *    "advertiser_app_id","expires_at" (RFC 3339)}
 * Render title, icon, description, cta and the sponsored_label, which must be
 * visible; stop showing it at expires_at.
 * XPROMO_NO_FILL: nothing to show; *placement is 0, *ad_json is
 * {"filled":false,"no_fill_reason":"..."} and err (if asked) says the reason.
 * ad_json may be NULL when the caller does not want it.
 */
XPROMO_API xpromo_status xpromo_fill(xpromo_agent agent, const char *slot, xpromo_placement *placement, char **ad_json, xpromo_error **err);

/*
 * The user clicked the placement's call to action: sign the click token,
 * queue its report (attempted at once, within send_timeout_ms), write the
 * token to the local inbox for the advertised app, and return in
 * *download_url the creative's download URL carrying the token: the app
 * opens it in the browser. A second click returns the same URL.
 * XPROMO_ERR_OFFER_EXPIRED after the offer lapsed. The handoff does not
 * depend on the network: an unsent report waits in the offline queue.
 */
XPROMO_API xpromo_status xpromo_placement_click(xpromo_placement placement, char **download_url, xpromo_error **err);

/* Forget a placement. */
XPROMO_API xpromo_status xpromo_placement_free(xpromo_placement placement, xpromo_error **err);

/*
 * Publisher, in one call: fill slot, call render (on this thread) with the
 * ad, and on XPROMO_OUTCOME_CLICKED click it. *result_json:
 *   {"filled":true,"outcome":"clicked"|"dismissed"|"not_shown",
 *    "ad":{...as xpromo_fill...},"download_url":"..." (when clicked)}
 * or, with XPROMO_NO_FILL, {"filled":false,"no_fill_reason":"..."}.
 * result_json may be NULL.
 */
XPROMO_API xpromo_status xpromo_show(xpromo_agent agent, const char *slot, xpromo_render_fn render, void *user_data, char **result_json, xpromo_error **err);

/*
 * Advertiser, at every launch: on the first launch find the click token
 * that led to this install (inbox, download provenance), countersign it
 * with the app's SDK key, remember the claim in the data directory, queue
 * the install claim (attempted at once) and answer the install state; later
 * launches answer the remembered state. *state_json (may be NULL):
 *   {"checked_at","claimed","channel","token","token_hash",
 *    "countersignature","claimed_at","answered","chain_id","state",
 *    "refusal","heartbeat_seq","last_heartbeat_at"}
 * "claimed":false is an organic install (nothing is sent). A claim not yet
 * answered ("answered":false) waits in the offline queue. "refusal" holds
 * the server's code when it refused the claim, which is final.
 */
XPROMO_API xpromo_status xpromo_claim_install(xpromo_agent agent, char **state_json, xpromo_error **err);

/* The install state as xpromo_claim_install answers it, without looking for
 * a token or sending anything. */
XPROMO_API xpromo_status xpromo_install_state(xpromo_agent agent, char **state_json, xpromo_error **err);

/*
 * Advertiser: tell the server the app is in use. Call it at launch, then
 * every hour while the app runs (xpromo_agent_start does it for you): the
 * first heartbeat 48 to 72 hours after the install activates it. Queues one
 * heartbeat (never two) and attempts it at once; it is signed when it is
 * sent. XPROMO_ERR_NO_CHAIN: nothing to send for (organic, refused, or the
 * chain moved on). XPROMO_OK does not mean it was delivered: see
 * xpromo_queue_length.
 */
XPROMO_API xpromo_status xpromo_heartbeat(xpromo_agent agent, xpromo_error **err);

/*
 * Deliver every queued event now, in order, within send_timeout_ms.
 * XPROMO_OK: the queue is empty. XPROMO_ERR_NETWORK: the server could not
 * be reached in time; the events stay queued. An event the server refuses
 * leaves the queue (its answer is recorded: see xpromo_install_state).
 */
XPROMO_API xpromo_status xpromo_flush(xpromo_agent agent, xpromo_error **err);

/* The number of events waiting in the offline queue, in *out. */
XPROMO_API xpromo_status xpromo_queue_length(xpromo_agent agent, int64_t *out, xpromo_error **err);

#endif /* XPROMO_NO_PROTOTYPES */

#ifdef __cplusplus
}
#endif

#endif /* XPROMO_H */
