/*
 * app.c: a desktop app's part of the xpromo story, through the C ABI only
 * (xpromo.h), as a C or C++ app embeds the SDK. The driver (driver/) plays
 * the server's side and checks what this program prints.
 *
 *   app publish   the publisher app: fill the onboarding_complete slot,
 *                 render it (the render callback clicks), report the click,
 *                 flush. Prints the xpromo_show answer.
 *   app launch    the advertiser app's launch: claim the install, send a
 *                 heartbeat, flush. With XPROMO_OFFLINE_CONFIG, first a
 *                 launch with the network down: the claim waits in the
 *                 offline queue, and is delivered by the launch after.
 *                 Prints the install state.
 *
 * Environment: XPROMO_CONFIG (the agent's JSON configuration),
 * XPROMO_OFFLINE_CONFIG, XPROMO_CLOCK_OFFSET_MS (the device clock's lead,
 * following the server's test clock).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xpromo.h"

static int64_t clock_offset_ms;

static int64_t device_clock(void *user_data) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + *(const int64_t *)user_data;
}

static int log_lines; /* atomically: the callback may run on any thread */

static void log_line(void *user_data, int32_t level, const char *message) {
	__atomic_add_fetch(&log_lines, 1, __ATOMIC_SEQ_CST);
	fprintf(stderr, "%s: xpromo log %d: %s\n", (const char *)user_data, level, message);
}

static int32_t render(void *user_data, const char *ad_json) {
	fprintf(stderr, "%s: rendering the ad %s; the user clicks\n", (const char *)user_data, ad_json);
	return XPROMO_OUTCOME_CLICKED;
}

static void die(const char *what, xpromo_status status, xpromo_error *err) {
	fprintf(stderr, "app: %s: status %d", what, status);
	if (err != NULL) {
		fprintf(stderr, " %s (http %d): %s", err->code, err->http_status, err->message);
	}
	fprintf(stderr, "\n");
	xpromo_error_free(err);
	exit(1);
}

/* want fails the program unless the call returned status; it frees the
 * error. (The call is made before err is read: it sets err.) */
#define want(what, call, status, err)                   \
	do {                                                \
		xpromo_status got_ = (call);                    \
		if (got_ != (status)) {                         \
			die(what, got_, err);                       \
		}                                               \
		xpromo_error_free(err);                         \
		err = NULL;                                     \
	} while (0)

static xpromo_agent open_agent(const char *env) {
	const char *config = getenv(env);
	xpromo_agent agent = 0;
	xpromo_error *err = NULL;
	if (config == NULL) {
		fprintf(stderr, "app: %s is not set\n", env);
		exit(2);
	}
	want("xpromo_agent_new", xpromo_agent_new(config, &agent, &err), XPROMO_OK, err);
	want("xpromo_set_clock", xpromo_set_clock(agent, device_clock, &clock_offset_ms, &err), XPROMO_OK, err);
	want("xpromo_set_logger", xpromo_set_logger(agent, log_line, (void *)"app", XPROMO_LOG_DEBUG, &err), XPROMO_OK, err);
	return agent;
}

static int64_t queue_length(xpromo_agent agent) {
	int64_t n = -1;
	xpromo_error *err = NULL;
	want("xpromo_queue_length", xpromo_queue_length(agent, &n, &err), XPROMO_OK, err);
	return n;
}

static void close_agent(xpromo_agent agent) {
	xpromo_error *err = NULL;
	want("xpromo_agent_free", xpromo_agent_free(agent, &err), XPROMO_OK, err);
}

static int publish(void) {
	xpromo_agent agent = open_agent("XPROMO_CONFIG");
	xpromo_error *err = NULL;
	char *result = NULL;
	want("xpromo_show", xpromo_show(agent, "onboarding_complete", render, (void *)"publisher", &result, &err), XPROMO_OK, err);
	want("xpromo_flush", xpromo_flush(agent, &err), XPROMO_OK, err);
	if (queue_length(agent) != 0) {
		fprintf(stderr, "app: the click report is still queued after a flush\n");
		return 1;
	}
	close_agent(agent);
	printf("%s\n", result);
	xpromo_string_free(result);
	return 0;
}

static int launch(void) {
	xpromo_error *err = NULL;
	char *state = NULL;
	xpromo_status status;

	if (getenv("XPROMO_OFFLINE_CONFIG") != NULL) {
		/* The first launch, with the network down. */
		xpromo_agent offline = open_agent("XPROMO_OFFLINE_CONFIG");
		want("offline xpromo_claim_install", xpromo_claim_install(offline, &state, &err), XPROMO_OK, err);
		if (strstr(state, "\"claimed\":true") == NULL || strstr(state, "\"answered\":false") == NULL) {
			fprintf(stderr, "app: offline, the claim is not made and waiting: %s\n", state);
			return 1;
		}
		xpromo_string_free(state);
		status = xpromo_flush(offline, &err);
		if (status != XPROMO_ERR_NETWORK || err == NULL || strcmp(err->code, "network") != 0 || err->http_status != 0) {
			die("offline xpromo_flush (want XPROMO_ERR_NETWORK)", status, err);
		}
		fprintf(stderr, "app: offline: %s\n", err->message);
		xpromo_error_free(err);
		if (queue_length(offline) != 1) {
			fprintf(stderr, "app: offline, the install claim is not queued\n");
			return 1;
		}
		if (__atomic_load_n(&log_lines, __ATOMIC_SEQ_CST) == 0) {
			fprintf(stderr, "app: offline, the SDK logged nothing through the callback\n");
			return 1;
		}
		close_agent(offline);
		/* The next launch is online: the queue was kept. */
		xpromo_agent agent = open_agent("XPROMO_CONFIG");
		if (queue_length(agent) != 1) {
			fprintf(stderr, "app: the queued install claim did not survive the restart\n");
			return 1;
		}
		close_agent(agent);
	}

	xpromo_agent agent = open_agent("XPROMO_CONFIG");
	want("xpromo_claim_install", xpromo_claim_install(agent, &state, &err), XPROMO_OK, err);
	xpromo_string_free(state);
	want("xpromo_flush", xpromo_flush(agent, &err), XPROMO_OK, err);
	want("xpromo_heartbeat", xpromo_heartbeat(agent, &err), XPROMO_OK, err);
	want("xpromo_flush", xpromo_flush(agent, &err), XPROMO_OK, err);
	if (queue_length(agent) != 0) {
		fprintf(stderr, "app: events are still queued after a flush\n");
		return 1;
	}
	want("xpromo_install_state", xpromo_install_state(agent, &state, &err), XPROMO_OK, err);
	close_agent(agent);
	printf("%s\n", state);
	xpromo_string_free(state);
	return 0;
}

int main(int argc, char **argv) {
	const char *offset = getenv("XPROMO_CLOCK_OFFSET_MS");
	if (offset != NULL) {
		clock_offset_ms = strtoll(offset, NULL, 10);
	}
	if (argc == 2 && strcmp(argv[1], "publish") == 0) {
		return publish();
	}
	if (argc == 2 && strcmp(argv[1], "launch") == 0) {
		return launch();
	}
	fprintf(stderr, "usage: app publish | app launch\n");
	return 2;
}
