package apperr

import "sort"

// Entry describes one code: the HTTP status it maps to and when it happens.
type Entry struct {
	Code      string
	Status    int
	Condition string
}

// Codes. Each constant must have an entry in catalogue below and a row in
// docs/errors.md (TestCatalogueMatchesDocs enforces both).
const (
	Internal    = "internal"
	Unavailable = "unavailable"
	NotFound    = "not_found"

	MethodNotAllowed = "method_not_allowed"

	// Ledger.
	InvalidOperation    = "invalid_operation"
	OperationKeyReused  = "operation_key_reused"
	InsufficientFunds   = "insufficient_funds"
	HoldNotFound        = "hold_not_found"
	HoldAlreadyResolved = "hold_already_resolved"
	HoldMismatch        = "hold_mismatch"
	LedgerAppendOnly    = "ledger_append_only"
	Conflict            = "conflict"
)

var catalogue = map[string]Entry{}

func def(code string, status int, condition string) {
	catalogue[code] = Entry{Code: code, Status: status, Condition: condition}
}

func init() {
	def(Internal, 500, "An unexpected server error; the request may be retried.")
	def(Unavailable, 503, "A dependency (database, cache) is unreachable; retry after `retry_after` when given.")
	def(NotFound, 404, "The resource does not exist, or belongs to another app (the two are indistinguishable).")
	def(MethodNotAllowed, 405, "The path exists but not with this HTTP method.")

	def(InvalidOperation, 422, "A ledger operation is malformed: no key, no postings, a zero amount, an unknown line type, or postings that do not sum to zero.")
	def(OperationKeyReused, 422, "A ledger operation key was used before for a different operation.")
	def(InsufficientFunds, 409, "The operation would take a wallet or escrow account below zero.")
	def(HoldNotFound, 404, "An escrow release or charge names a hold that does not exist.")
	def(HoldAlreadyResolved, 409, "The escrow hold was already released or charged; a hold resolves at most once.")
	def(HoldMismatch, 422, "An escrow release or charge disagrees with its hold (amount or advertiser).")
	def(LedgerAppendOnly, 500, "Something tried to update or delete a ledger row; the database refused it.")
	def(Conflict, 409, "A concurrent transaction touched the same rows; retry the request.")
}

// Lookup returns the catalogue entry for code.
func Lookup(code string) (Entry, bool) {
	e, ok := catalogue[code]
	return e, ok
}

// Status returns the HTTP status for code (500 for unknown codes).
func Status(code string) int {
	if e, ok := catalogue[code]; ok {
		return e.Status
	}
	return 500
}

// All returns every catalogued entry, sorted by code.
func All() []Entry {
	out := make([]Entry, 0, len(catalogue))
	for _, e := range catalogue {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
