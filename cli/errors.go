package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Exit codes: distinct per class of failure, so that scripts can branch
// without parsing messages (docs/cli.md).
const (
	ExitOK          = 0
	ExitOther       = 1   // anything not below: a local file, an unexpected answer
	ExitUsage       = 2   // bad command line or missing setting (nothing was sent)
	ExitAuth        = 3   // 401, 403, or no credential to send
	ExitNotFound    = 4   // 404
	ExitValidation  = 5   // 400, 413, 415, 422: the request was refused as malformed
	ExitConflict    = 6   // 409 (and 402 outside top-up): the state does not allow it
	ExitRateLimited = 7   // 429
	ExitServer      = 8   // 5xx, or the server could not be reached
	ExitInterrupted = 130 // interrupted (Ctrl-C), as shells report SIGINT
)

// exitForStatus maps an HTTP status of an error answer to an exit code.
func exitForStatus(status int) int {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ExitAuth
	case status == http.StatusNotFound:
		return ExitNotFound
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity ||
		status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType:
		return ExitValidation
	case status == http.StatusConflict || status == http.StatusPaymentRequired:
		return ExitConflict
	case status == http.StatusTooManyRequests:
		return ExitRateLimited
	case status >= 500:
		return ExitServer
	}
	return ExitOther
}

// cliError is a failure found by the CLI itself, with a stable code like
// the API's.
type cliError struct {
	code string
	exit int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

// Local error codes.
const (
	codeUsage             = "usage"
	codeMissingAPIKey     = "missing_api_key"
	codeMissingAdminToken = "missing_admin_token"
	codeMissingAppID      = "missing_app_id"
	codeNetwork           = "network"
	codeInterrupted       = "interrupted"
	codeTimeout           = "timeout"
	codeConfig            = "config"
	codeFile              = "file"
	codeFailed            = "failed"
)

func usageErr(format string, args ...any) error {
	return &cliError{code: codeUsage, exit: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

func localErr(code string, exit int, format string, args ...any) error {
	return &cliError{code: code, exit: exit, msg: fmt.Sprintf(format, args...)}
}

// classify returns the code, message and exit status of err.
func classify(err error) (code, msg string, exit int) {
	var ce *cliError
	var ae *xpromo.Error
	switch {
	case errors.As(err, &ce):
		return ce.code, ce.msg, ce.exit
	case errors.As(err, &ae):
		code = ae.Code
		if code == "" { // an answer without the API's error body (a proxy's page)
			code = "http_" + strconv.Itoa(ae.Status)
		}
		msg = ae.Message
		if ae.RetryAfter != nil {
			msg += " (retry_after " + ae.RetryAfter.UTC().Format(time.RFC3339) + ")"
		}
		if ae.RequestID != "" {
			msg += " (request " + ae.RequestID + ")"
		}
		return code, msg, exitForStatus(ae.Status)
	case errors.Is(err, context.Canceled):
		return codeInterrupted, "interrupted", ExitInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		return codeTimeout, err.Error(), ExitServer
	case isNetwork(err):
		return codeNetwork, err.Error(), ExitServer
	}
	return codeFailed, err.Error(), ExitOther
}

// isNetwork reports whether err is the server being unreachable: a
// transport error, not an answer.
func isNetwork(err error) bool {
	var ue *url.Error
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &oe)
}

// report prints err to stderr as `error: <code>: <message>` and returns the
// exit status.
func (r *runner) report(cmd *cobra.Command, err error) int {
	code, msg, exit := classify(err)
	fmt.Fprintf(r.env.Stderr, "error: %s: %s\n", code, oneLine(msg))
	if exit == ExitUsage && cmd != nil {
		fmt.Fprintf(r.env.Stderr, "see: %s --help\n", cmd.CommandPath())
	}
	return exit
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func quote(s string) string { return strconv.Quote(s) }

func joinComma(s []string) string { return strings.Join(s, ", ") }
