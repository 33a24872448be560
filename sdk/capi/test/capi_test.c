/*
 * capi_test.c: every error path of the C ABI (xpromo.h), and the ordinary
 * paths around them, against a real server the driver (driver/) prepared:
 * bad arguments and JSON, bad handles (unknown, freed, of the other kind),
 * the data directory in use, server refusals (an unregistered key, a
 * clock out of bounds), the network down, the render callback's answers,
 * placements outliving their agent, and concurrent calls.
 *
 *   capi_test [--loop N]
 *
 * --loop repeats every test N times (default 1). Exits 1 on any failure.
 * With CAPI_TEST_LEAK set it only leaks an error on purpose, the control
 * that proves the leak check (run.sh) catches a leak.
 *
 * Environment: XPROMO_CONFIG (a publisher whose slots get fills, its
 * inbox off), XPROMO_BAD_KEY_CONFIG (the same app with an unregistered
 * key), XPROMO_OFFLINE_CONFIG (a base URL where nothing listens),
 * XPROMO_CLOCK_OFFSET_MS.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xpromo.h"

static int failures;
static int checks;

#define EXPECT(cond, ...)                                                  \
	do {                                                                   \
		checks++;                                                          \
		if (!(cond)) {                                                     \
			failures++;                                                    \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
		}                                                                  \
	} while (0)

/* expect checks a call's status and its error, then frees the error. code
 * NULL: any code. (The call is made first: it sets err.) */
#define expect(call, want, err, code)                                 \
	do {                                                              \
		xpromo_status got_ = (call);                                  \
		expect_at(__LINE__, #call, got_, want, err, code);            \
	} while (0)

static void expect_at(int line, const char *call, xpromo_status got, xpromo_status want, xpromo_error *err, const char *code) {
	checks++;
	if (got != want) {
		failures++;
		fprintf(stderr, "FAIL capi_test.c:%d: %s = %d, want %d", line, call, got, want);
		if (err != NULL) {
			fprintf(stderr, " (%s, http %d: %s)", err->code, err->http_status, err->message);
		}
		fputc('\n', stderr);
	} else if (want == XPROMO_OK) {
		if (err != NULL) {
			failures++;
			fprintf(stderr, "FAIL capi_test.c:%d: %s: XPROMO_OK with an error\n", line, call);
		}
	} else if (err == NULL || err->status != want || err->code == NULL || err->message == NULL || err->message[0] == '\0') {
		failures++;
		fprintf(stderr, "FAIL capi_test.c:%d: %s: status %d without its details\n", line, call, want);
	} else if (code != NULL && strcmp(err->code, code) != 0) {
		failures++;
		fprintf(stderr, "FAIL capi_test.c:%d: %s: code %s, want %s (%s)\n", line, call, err->code, code, err->message);
	}
	xpromo_error_free(err);
}

static const char *env(const char *name) {
	const char *v = getenv(name);
	if (v == NULL) {
		fprintf(stderr, "capi_test: %s is not set\n", name);
		exit(2);
	}
	return v;
}

static int64_t clock_offset_ms;

static int64_t device_clock(void *user_data) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + *(const int64_t *)user_data;
}

static xpromo_agent open_agent(const char *name) {
	xpromo_agent agent = 0;
	xpromo_error *err = NULL;
	expect(xpromo_agent_new(env(name), &agent, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_set_clock(agent, device_clock, &clock_offset_ms, &err), XPROMO_OK, err, NULL);
	return agent;
}

static void close_agent(xpromo_agent agent) {
	xpromo_error *err = NULL;
	expect(xpromo_agent_free(agent, &err), XPROMO_OK, err, NULL);
}

static void test_version(void) {
	const char *v = xpromo_version();
	EXPECT(v != NULL && strncmp(v, "1.", 2) == 0, "xpromo_version() = %s", v ? v : "NULL");
	xpromo_string_free(NULL);
	xpromo_error_free(NULL);
}

static void test_invalid_config(void) {
	static const char *bad[] = {
		"",
		"{",
		"[]",
		"{\"bogus\":1}",
		"{}",
		"{\"base_url\":\"http://127.0.0.1:1\",\"app_id\":\"app_x\",\"sdk_key_pem\":\"x\",\"data_dir\":\"d\"} {}",
		"{\"base_url\":\"http://127.0.0.1:1\",\"app_id\":\"app_x\",\"sdk_key_pem\":\"not a key\",\"data_dir\":\"d\"}",
		"{\"base_url\":\"http://127.0.0.1:1\",\"app_id\":\"app x\",\"sdk_key_pem\":\"x\",\"data_dir\":\"d\"}",
		"{\"base_url\":\"http://127.0.0.1:1\",\"app_id\":\"app_x\",\"sdk_key_pem\":\"x\",\"data_dir\":\"d\",\"platform\":\"linux\"}",
		"{\"base_url\":\"http://127.0.0.1:1\",\"app_id\":\"app_x\",\"sdk_key_pem\":\"x\",\"data_dir\":\"d\",\"send_timeout_ms\":-1}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		xpromo_agent agent = 42;
		xpromo_error *err = NULL;
		xpromo_status s = xpromo_agent_new(bad[i], &agent, &err);
		EXPECT(agent == 0, "config %zu: agent %llu on failure", i, (unsigned long long)agent);
		expect(s, XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	}
	xpromo_agent agent = 0;
	xpromo_error *err = NULL;
	expect(xpromo_agent_new(NULL, &agent, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_agent_new(env("XPROMO_CONFIG"), NULL, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	/* err NULL: the status alone. */
	EXPECT(xpromo_agent_new("{", &agent, NULL) == XPROMO_ERR_INVALID_ARGUMENT, "without err");
}

static int32_t render_nothing(void *user_data, const char *ad_json) {
	(void)user_data;
	(void)ad_json;
	return 7; /* no XPROMO_OUTCOME_* */
}

static int32_t render_dismissed(void *user_data, const char *ad_json) {
	*(int *)user_data += strstr(ad_json, "\"sponsored_label\":\"Sponsored\"") != NULL;
	return XPROMO_OUTCOME_DISMISSED;
}

static void log_count(void *user_data, int32_t level, const char *message) {
	(void)level;
	(void)message;
	__atomic_add_fetch((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

/* every call on handle h, which is no agent and no placement */
static void expect_bad_handle(uint64_t h) {
	xpromo_error *err = NULL;
	xpromo_placement p = 1;
	char *s = (char *)"untouched";
	int64_t n = 5;
	expect(xpromo_agent_free(h, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_set_logger(h, log_count, &n, XPROMO_LOG_DEBUG, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_set_clock(h, device_clock, &clock_offset_ms, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_agent_start(h, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_device_id(h, &s, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	EXPECT(s == NULL, "device_id out not cleared");
	err = NULL;
	expect(xpromo_fill(h, "about_window", &p, &s, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	EXPECT(p == 0 && s == NULL, "fill outs not cleared");
	err = NULL;
	expect(xpromo_show(h, "about_window", render_nothing, NULL, &s, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_claim_install(h, &s, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_install_state(h, &s, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_heartbeat(h, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_flush(h, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	err = NULL;
	expect(xpromo_queue_length(h, &n, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	EXPECT(n == 0, "queue_length out not cleared");
	EXPECT(xpromo_heartbeat(h, NULL) == XPROMO_ERR_BAD_HANDLE, "without err");
}

static void expect_bad_placement(xpromo_placement p) {
	xpromo_error *err = NULL;
	char *url = NULL;
	expect(xpromo_placement_click(p, &url, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
	EXPECT(url == NULL, "click out set");
	err = NULL;
	expect(xpromo_placement_free(p, &err), XPROMO_ERR_BAD_HANDLE, err, "bad_handle");
}

static void test_bad_handles(void) {
	expect_bad_handle(0);
	expect_bad_handle(987654321);
	expect_bad_placement(0);
	expect_bad_placement(987654321);

	xpromo_agent agent = open_agent("XPROMO_CONFIG");
	expect_bad_placement(agent); /* an agent is no placement */
	close_agent(agent);
	expect_bad_handle(agent); /* freed */
}

static void test_publisher(void) {
	xpromo_agent agent = open_agent("XPROMO_CONFIG");
	xpromo_agent second = 9;
	xpromo_error *err = NULL;
	char *s = NULL;
	int64_t n = -1;
	int logged = 0;

	/* One process per data directory. */
	expect(xpromo_agent_new(env("XPROMO_CONFIG"), &second, &err), XPROMO_ERR_DATA_DIR_IN_USE, err, "data_dir_in_use");
	EXPECT(second == 0, "second agent %llu", (unsigned long long)second);

	err = NULL;
	expect(xpromo_set_logger(agent, log_count, &logged, XPROMO_LOG_DEBUG, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_device_id(agent, &s, &err), XPROMO_OK, err, NULL);
	EXPECT(s != NULL && strncmp(s, "dev_", 4) == 0, "device id %s", s ? s : "NULL");
	xpromo_string_free(s);
	err = NULL;
	expect(xpromo_device_id(agent, NULL, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_queue_length(agent, NULL, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_install_state(agent, NULL, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_agent_start(agent, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_agent_start(agent, &err), XPROMO_OK, err, NULL);

	/* A publisher's install is organic: nothing to claim, no chain. */
	err = NULL;
	expect(xpromo_claim_install(agent, &s, &err), XPROMO_OK, err, NULL);
	EXPECT(s != NULL && strstr(s, "\"claimed\":false") != NULL, "organic install state %s", s ? s : "NULL");
	xpromo_string_free(s);
	err = NULL;
	expect(xpromo_heartbeat(agent, &err), XPROMO_ERR_NO_CHAIN, err, "no_chain");

	/* Bad slots and outs. */
	xpromo_placement p = 3;
	err = NULL;
	expect(xpromo_fill(agent, "lobby", &p, &s, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	EXPECT(p == 0 && s == NULL, "fill outs after a failure");
	err = NULL;
	expect(xpromo_fill(agent, NULL, &p, &s, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_fill(agent, "about_window", NULL, &s, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_show(agent, "about_window", NULL, NULL, &s, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");

	/* Fill, click twice, free. */
	err = NULL;
	expect(xpromo_fill(agent, "about_window", &p, &s, &err), XPROMO_OK, err, NULL);
	EXPECT(p != 0 && s != NULL && strstr(s, "\"sponsored_label\":\"Sponsored\"") != NULL, "ad %s", s ? s : "NULL");
	xpromo_string_free(s);
	char *url = NULL, *again = NULL;
	err = NULL;
	expect(xpromo_placement_click(p, NULL, &err), XPROMO_ERR_INVALID_ARGUMENT, err, "invalid_argument");
	err = NULL;
	expect(xpromo_placement_click(p, &url, &err), XPROMO_OK, err, NULL);
	EXPECT(url != NULL && strstr(url, "xpromo_click=") != NULL, "download URL %s", url ? url : "NULL");
	err = NULL;
	expect(xpromo_placement_click(p, &again, &err), XPROMO_OK, err, NULL);
	EXPECT(url != NULL && again != NULL && strcmp(url, again) == 0, "a second click answers another URL");
	xpromo_string_free(url);
	xpromo_string_free(again);
	expect_bad_handle(p); /* a placement is no agent */
	err = NULL;
	expect(xpromo_placement_free(p, &err), XPROMO_OK, err, NULL);
	expect_bad_placement(p);

	/* The render hook. */
	int rendered = 0;
	err = NULL;
	expect(xpromo_show(agent, "settings_idle", render_nothing, NULL, &s, &err), XPROMO_ERR_RENDER, err, "render_failed");
	EXPECT(s == NULL, "show result after a failure");
	err = NULL;
	expect(xpromo_show(agent, "settings_idle", render_dismissed, &rendered, &s, &err), XPROMO_OK, err, NULL);
	EXPECT(rendered == 1, "render callback called %d times with the ad", rendered);
	EXPECT(s != NULL && strstr(s, "\"outcome\":\"dismissed\"") != NULL && strstr(s, "download_url") == NULL, "show %s", s ? s : "NULL");
	xpromo_string_free(s);
	err = NULL;
	expect(xpromo_show(agent, "settings_idle", render_dismissed, &rendered, NULL, &err), XPROMO_OK, err, NULL);

	err = NULL;
	expect(xpromo_flush(agent, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_queue_length(agent, &n, &err), XPROMO_OK, err, NULL);
	EXPECT(n == 0, "queue length %lld after a flush", (long long)n);

	/* A placement does not outlive its agent. */
	err = NULL;
	expect(xpromo_fill(agent, "about_window", &p, NULL, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_set_logger(agent, NULL, NULL, 0, &err), XPROMO_OK, err, NULL);
	close_agent(agent);
	expect_bad_placement(p);
	expect_bad_handle(agent);
}

static void test_server_refusals(void) {
	/* A key the server does not know for the app. */
	xpromo_agent agent = open_agent("XPROMO_BAD_KEY_CONFIG");
	xpromo_placement p = 0;
	xpromo_error *err = NULL;
	char *s = NULL;
	xpromo_status st = xpromo_fill(agent, "about_window", &p, &s, &err);
	EXPECT(err != NULL && err->http_status == 403, "an unregistered key: http %d", err ? err->http_status : 0);
	expect(st, XPROMO_ERR_SERVER, err, "fraud_bad_signature");
	EXPECT(p == 0 && s == NULL, "fill outs after a refusal");
	close_agent(agent);

	/* A device clock an hour behind: the signed fill is stale. */
	agent = open_agent("XPROMO_CONFIG");
	int64_t behind = clock_offset_ms - 3600 * 1000;
	err = NULL;
	expect(xpromo_set_clock(agent, device_clock, &behind, &err), XPROMO_OK, err, NULL);
	err = NULL;
	st = xpromo_fill(agent, "about_window", &p, NULL, &err);
	EXPECT(err != NULL && err->http_status == 403, "a stale fill: http %d", err ? err->http_status : 0);
	expect(st, XPROMO_ERR_SERVER, err, "fraud_token_expired");
	close_agent(agent);
}

static void test_offline(void) {
	xpromo_agent agent = open_agent("XPROMO_OFFLINE_CONFIG");
	xpromo_placement p = 0;
	xpromo_error *err = NULL;
	int64_t n = -1;
	expect(xpromo_fill(agent, "about_window", &p, NULL, &err), XPROMO_ERR_NETWORK, err, "network");
	err = NULL;
	expect(xpromo_show(agent, "about_window", render_nothing, NULL, NULL, &err), XPROMO_ERR_NETWORK, err, "network");
	err = NULL;
	expect(xpromo_flush(agent, &err), XPROMO_OK, err, NULL);
	err = NULL;
	expect(xpromo_queue_length(agent, &n, &err), XPROMO_OK, err, NULL);
	EXPECT(n == 0, "queue length %lld", (long long)n);
	close_agent(agent);
}

/* Concurrent calls on one agent. */
struct worker {
	xpromo_agent agent;
	int failed;
};

static void *work(void *arg) {
	struct worker *w = arg;
	for (int i = 0; i < 20; i++) {
		char *s = NULL;
		int64_t n = 0;
		if (xpromo_device_id(w->agent, &s, NULL) != XPROMO_OK || xpromo_queue_length(w->agent, &n, NULL) != XPROMO_OK) {
			w->failed++;
		}
		xpromo_string_free(s);
		if (xpromo_install_state(w->agent, &s, NULL) != XPROMO_OK || xpromo_heartbeat(w->agent, NULL) != XPROMO_ERR_NO_CHAIN) {
			w->failed++;
		}
		xpromo_string_free(s);
	}
	return NULL;
}

static void test_threads(void) {
	xpromo_agent agent = open_agent("XPROMO_CONFIG");
	pthread_t t[4];
	struct worker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){agent, 0};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT(w[i].failed == 0, "thread %d: %d failed calls", i, w[i].failed);
	}
	close_agent(agent);
}

int main(int argc, char **argv) {
	int loops = 1;
	if (argc == 3 && strcmp(argv[1], "--loop") == 0) {
		loops = atoi(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: capi_test [--loop N]\n");
		return 2;
	}
	if (getenv("CAPI_TEST_LEAK") != NULL) {
		/* The leak check's control: an error never freed must be caught. */
		xpromo_agent agent = 0;
		xpromo_error *err = NULL;
		xpromo_agent_new("{", &agent, &err);
		printf("capi_test: leaked the error of a failed call on purpose\n");
		return 0;
	}
	const char *offset = getenv("XPROMO_CLOCK_OFFSET_MS");
	if (offset != NULL) {
		clock_offset_ms = strtoll(offset, NULL, 10);
	}
	for (int i = 0; i < loops; i++) {
		test_version();
		test_invalid_config();
		test_bad_handles();
		test_publisher();
		test_server_refusals();
		test_offline();
		test_threads();
	}
	printf("capi_test: %d checks, %d failed (%d loops)\n", checks, failures, loops);
	return failures == 0 ? 0 : 1;
}
