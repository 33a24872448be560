package webhook

// Error is a verification failure with a stable Code. The package's
// sentinels are *Error values; the errors returned wrap them with detail, so
// test with errors.Is(err, webhook.ErrTimestampTooOld) or read the code with
// errors.As.
type Error struct {
	// Code is stable across versions; build on it, never on the message.
	Code string
	// Malformed is true when the request is not a well-formed webhook at
	// all (answered 400 by Middleware) rather than one that fails the
	// check (401).
	Malformed bool
	msg       string
}

func (e *Error) Error() string { return e.msg }

var (
	// ErrMissingHeader: webhook-id, webhook-timestamp or webhook-signature
	// is absent or empty.
	ErrMissingHeader = &Error{Code: "webhook_missing_header", Malformed: true, msg: "webhook: missing header"}
	// ErrInvalidTimestamp: webhook-timestamp is not unix seconds.
	ErrInvalidTimestamp = &Error{Code: "webhook_invalid_timestamp", Malformed: true, msg: "webhook: invalid timestamp"}
	// ErrInvalidSignature: webhook-signature holds no well-formed v1
	// signature, only malformed entries (or too many entries).
	ErrInvalidSignature = &Error{Code: "webhook_invalid_signature", Malformed: true, msg: "webhook: malformed signature header"}
	// ErrTimestampTooOld: the message was signed longer ago than the
	// tolerance (a replay, or a receiver clock far ahead).
	ErrTimestampTooOld = &Error{Code: "webhook_timestamp_too_old", msg: "webhook: timestamp too old"}
	// ErrTimestampTooNew: the timestamp is further ahead than the
	// tolerance (a sender or receiver clock far off).
	ErrTimestampTooNew = &Error{Code: "webhook_timestamp_too_new", msg: "webhook: timestamp too new"}
	// ErrNoMatchingSignature: no v1 signature matches any secret: wrong
	// secret, or the id, timestamp or body was altered.
	ErrNoMatchingSignature = &Error{Code: "webhook_no_matching_signature", msg: "webhook: no matching signature"}
	// ErrInvalidSecret: a secret given to this package is not
	// "whsec_" + standard base64 of 24 to 64 bytes. A setup error of the
	// receiver, never the sender's fault.
	ErrInvalidSecret = &Error{Code: "webhook_invalid_secret", msg: "webhook: invalid secret"}
	// ErrBodyUnreadable: Middleware could not read the body (the client
	// went away or broke the stream).
	ErrBodyUnreadable = &Error{Code: "webhook_body_unreadable", Malformed: true, msg: "webhook: body unreadable"}
	// ErrBodyTooLarge: Middleware read more than MaxBodyBytes.
	ErrBodyTooLarge = &Error{Code: "webhook_body_too_large", Malformed: true, msg: "webhook: body too large"}
)
