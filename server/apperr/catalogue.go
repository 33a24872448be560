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

	// Requests.
	Unauthorized          = "unauthorized"
	AdminAPIDisabled      = "admin_api_disabled"
	RateLimited           = "rate_limited"
	MalformedJSON         = "malformed_json"
	BodyTooLarge          = "body_too_large"
	UnsupportedMediaType  = "unsupported_media_type"
	UnknownField          = "unknown_field"
	InvalidType           = "invalid_type"
	MissingField          = "missing_field"
	InvalidIdempotencyKey = "invalid_idempotency_key"
	IdempotencyKeyReused  = "idempotency_key_reused"
	IdempotencyKeyInUse   = "idempotency_key_in_use"

	// The input policy (docs/errors.md).
	InvalidEncoding   = "invalid_encoding"
	DuplicateField    = "duplicate_field"
	BodyNotAllowed    = "body_not_allowed"
	RepeatedParameter = "repeated_parameter"
	UnknownParameter  = "unknown_parameter"
	InvalidCharacters = "invalid_characters"
	TooLong           = "too_long"
	JSONTooDeep       = "json_too_deep"
	JSONTooWide       = "json_too_wide"
	JSONKeyTooLong    = "json_key_too_long"

	// Field validation (422).
	InvalidName          = "invalid_name"
	InvalidPlatform      = "invalid_platform"
	InvalidBundleID      = "invalid_bundle_id"
	InvalidDomain        = "invalid_domain"
	InvalidURL           = "invalid_url"
	InvalidEmail         = "invalid_email"
	InvalidCategory      = "invalid_category"
	InvalidAppcastURL    = "invalid_appcast_url"
	FieldNotChangeable   = "field_not_changeable"
	UnknownCategory      = "unknown_category"
	BelowMinimum         = "below_minimum"
	BidBelowFloor        = "bid_below_floor"
	InvalidDate          = "invalid_date"
	InvalidRange         = "invalid_date_range"
	InvalidLimit         = "invalid_limit"
	InvalidCursor        = "invalid_cursor"
	InvalidPeriod        = "invalid_period"
	DateRangeTooLong     = "date_range_too_long"
	InvalidAmount        = "invalid_amount"
	InvalidPayoutAccount = "invalid_payout_account"
	InvalidNote          = "invalid_note"
	// The status filter of GET /v1/campaigns.
	InvalidCampaignStatus = "invalid_campaign_status"
	// The filters of the dashboard's lists (GET /v1/admin/apps, GET /v1/chains).
	InvalidAppStatus  = "invalid_app_status"
	InvalidChainState = "invalid_chain_state"
	InvalidRole       = "invalid_role"

	// Earn mode and complaints (docs/apps.md).
	InvalidEarnMode        = "invalid_earn_mode"
	EarnModeNotAllowed     = "earn_mode_not_allowed"
	InvalidComplaintReason = "invalid_complaint_reason"
	InvalidResolution      = "invalid_resolution"
	ComplaintNotAllowed    = "complaint_not_allowed"
	ComplaintOpen          = "complaint_open"
	ComplaintResolved      = "complaint_resolved"

	// State.
	InvalidTransition    = "invalid_transition"
	FloorCannotRise      = "floor_cannot_rise"
	BudgetExhausted      = "budget_exhausted"
	PayoutAccountMissing = "payout_account_missing"
	PayoutInProgress     = "payout_in_progress"
	PayoutNotAllowed     = "payout_not_allowed"
	CheckoutExpired      = "checkout_expired"
	PaymentNotCredited   = "payment_not_credited"
	TestModeOnly         = "test_mode_only"
	InvalidSignature     = "invalid_signature"
	InvalidPaymentHeader = "invalid_payment_header"

	// x402 payments (server/x402, docs/payments.md).
	X402NetworkMismatch  = "x402_network_mismatch"
	X402WrongPayee       = "x402_wrong_payee"
	X402WrongAmount      = "x402_wrong_amount"
	X402Expired          = "x402_expired"
	X402NotYetValid      = "x402_not_yet_valid"
	X402WindowTooLong    = "x402_window_too_long"
	X402BadSignature     = "x402_bad_signature"
	X402Replayed         = "x402_replayed"
	X402Pending          = "x402_pending"
	X402SettlementFailed = "x402_settlement_failed"
	X402Unavailable      = "x402_unavailable"

	// Ledger.
	InvalidOperation    = "invalid_operation"
	OperationKeyReused  = "operation_key_reused"
	InsufficientFunds   = "insufficient_funds"
	HoldNotFound        = "hold_not_found"
	HoldAlreadyResolved = "hold_already_resolved"
	HoldMismatch        = "hold_mismatch"
	LedgerAppendOnly    = "ledger_append_only"
	Conflict            = "conflict"

	// Attribution (fraud codes are also chain reason codes and the keys of
	// Stats.fraud_rejected).
	FraudTokenReused         = "fraud_token_reused"
	FraudTokenExpired        = "fraud_token_expired"
	FraudBadSignature        = "fraud_bad_signature"
	FraudBadCountersignature = "fraud_bad_countersignature"
	FraudDatacenterASN       = "fraud_datacenter_asn"
	FraudSelfPromotion       = "fraud_self_promotion"
	FraudCTITTooShort        = "fraud_ctit_too_short"
	FraudInstallVelocity     = "fraud_install_velocity"
	FraudDeviceReused        = "fraud_device_reused"
	FraudAppMismatch         = "fraud_app_mismatch"
	InvalidPublicKey         = "invalid_public_key"
	SDKKeyInUse              = "sdk_key_in_use"
	SDKKeyRevoked            = "sdk_key_revoked"
	TooManySDKKeys           = "too_many_sdk_keys"
	InvalidDuration          = "invalid_duration"
	InvalidSlot              = "invalid_slot"
	InvalidAppID             = "invalid_app_id"
	InvalidDeviceID          = "invalid_device_id"
	InvalidLocale            = "invalid_locale"

	// Webhooks (docs/webhooks.md).
	WebhookURLForbidden     = "webhook_url_forbidden"
	InvalidEventType        = "invalid_event_type"
	TooManyWebhookEndpoints = "too_many_webhook_endpoints"
	WebhookEndpointDisabled = "webhook_endpoint_disabled"

	// Vetting gate (docs/gate.md).
	GateRecheckRefused      = "gate_recheck_refused"
	GateDomainTooYoung      = "gate_domain_too_young"
	GatePackageTooLarge     = "gate_package_too_large" // the package readers' refusals: gate reasons, not error responses
	GatePackageTooDeep      = "gate_package_too_deep"
	GatePackageUnreadable   = "gate_package_unreadable"
	ContactCodeInvalid      = "contact_code_invalid"
	ContactCodeLocked       = "contact_code_locked"
	ContactChallengeExpired = "contact_challenge_expired"
	ContactChallengeUsed    = "contact_challenge_used"
	ContactNoChallenge      = "contact_no_challenge"
	ContactAlreadyVerified  = "contact_already_verified"
	ContactResendTooSoon    = "contact_resend_too_soon"
	ContactUndeliverable    = "contact_undeliverable"

	// Vetting gate, disk images (docs/gate.md, ".dmg").
	GatePackageUnsupportedCompression = "gate_package_unsupported_compression"
	GatePackageAPFSUnsupported        = "gate_package_apfs_unsupported"
)

// Vetting gate, revocation (docs/gate.md, "Revocation").
const (
	GateSignatureRevoked = "gate_signature_revoked"
)

// The dashboard's sign-in (server/dashboard).
const (
	SignInLinkInvalid = "sign_in_link_invalid"
	SignInFailed      = "sign_in_failed"
)

// catalogue maps a code to its entries; the first is the default status.
var catalogue = map[string][]Entry{}

func def(code string, status int, condition string) {
	catalogue[code] = append(catalogue[code], Entry{Code: code, Status: status, Condition: condition})
}

func listed(code string, status int) bool {
	for _, e := range catalogue[code] {
		if e.Status == status {
			return true
		}
	}
	return false
}

func init() {
	def(Internal, 500, "An unexpected server error; the request may be retried.")
	def(Unavailable, 503, "A dependency (database, cache) is unreachable; retry after `retry_after` when given.")
	def(NotFound, 404, "The resource does not exist, or belongs to another app (the two are indistinguishable).")
	def(MethodNotAllowed, 405, "The path exists but not with this HTTP method.")

	def(Unauthorized, 401, "The `Authorization: Bearer <API_KEY>` header is missing, malformed, or names no valid key (or, on the admin surface of a server with an admin token, the token is missing or wrong). The response carries `WWW-Authenticate: Bearer`.")
	def(AdminAPIDisabled, 403, "An admin endpoint was called on a server whose admin API is off: it was started without an admin token. Restart `xpromo-server` with `--admin-token` or `XPROMO_ADMIN_TOKEN` set to enable the admin API (its callers then send `Authorization: Bearer <admin token>`).")
	def(RateLimited, 429, "The key (or, on public endpoints, the IP) used up its request budget; `retry_after` and `Retry-After` say when the window resets.")
	def(MalformedJSON, 400, "The body is not valid JSON, or holds more than one JSON value.")
	def(BodyTooLarge, 413, "The body is larger than 1 MiB.")
	def(UnsupportedMediaType, 415, "A body was sent with a Content-Type other than `application/json`.")
	def(UnknownField, 422, "The body has a field the operation does not define (the message names it).")
	def(InvalidType, 422, "A field has the wrong JSON type, e.g. a string where an integer is expected (the message names it).")
	def(MissingField, 422, "A required field is missing or empty (the message names it).")
	def(InvalidIdempotencyKey, 400, "The `Idempotency-Key` header is empty, longer than 255 characters, or not printable ASCII.")
	def(IdempotencyKeyReused, 422, "The `Idempotency-Key` was used before (within 24 hours) with a different request.")
	def(IdempotencyKeyInUse, 409, "A request with the same `Idempotency-Key` is still being processed; retry shortly.")

	def(InvalidEncoding, 400, "The path, the query, a header the server reads (`Authorization`, `Idempotency-Key`, `X-Request-Id`, `Prefer`, `X-PAYMENT`, `Content-Type`, `Accept`, `X-Forwarded-For`) or a string of the JSON body is not valid UTF-8 or holds a NUL (`%00`, `\\u0000`); or the body escapes half of a UTF-16 surrogate pair (`\\ud800` alone); or the query string is not valid percent-encoding. The database can also answer it for text it cannot store.")
	def(DuplicateField, 400, "An object of the JSON body names the same field twice, at any depth (`{\"amount_cents\":1,\"amount_cents\":2}`).")
	def(BodyNotAllowed, 400, "A body was sent to an operation that takes none (every GET; the POSTs pause, resume, `keys/rotate`, payout, `sdk-keys/…/revoke`, the sweep, `/test/checkout/…`): a `Content-Length` above 0, or a chunked body with content.")
	def(RepeatedParameter, 400, "A query parameter is given more than once (`?from=…&from=…`); every parameter is single-valued.")
	def(UnknownParameter, 400, "The query string has a parameter the operation does not define (the message lists the ones it does).")
	def(InvalidCharacters, 422, "A string of the body holds a control character (U+0000–U+001F, U+007F–U+009F: no tabs or newlines either) or an invisible formatting character (the bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the marks U+200E, U+200F and U+061C, U+2028, U+2029, U+FEFF), and the field has no code of its own (`name` answers `invalid_name`, `note` `invalid_note`, …).")
	def(TooLong, 422, "A string of the body (or a header parameter such as `Prefer`) is longer than its `maxLength` in openapi.json, or an array has more items than its `maxItems` (the message names the field), and the field has no code of its own.")
	def(JSONTooDeep, 400, "A JSON body (a request's, or a message to `/mcp`) nests arrays and objects deeper than 32 levels. Refused before it is decoded, whatever else is wrong with it.")
	def(JSONTooWide, 400, "A JSON body holds more than 10,000 values in all (arrays, objects, array items and object fields). Refused before it is decoded, whatever else is wrong with it.")
	def(JSONKeyTooLong, 400, "An object key of a JSON body is longer than 256 bytes (no field of the API is). Refused before it is decoded, whatever else is wrong with it.")

	def(InvalidName, 422, "`name` is longer than 200 characters, or holds a control or invisible formatting character (as listed under `invalid_characters`).")
	def(InvalidPlatform, 422, "`platform` is not one of `mac`, `win`.")
	def(InvalidBundleID, 422, "`bundle_id` is not a reverse-DNS identifier (at least two dot-separated parts of letters, digits, `-`, `_`; at most 255 characters).")
	def(InvalidDomain, 422, "`domain` is not a registrable DNS name (e.g. `example.com`, no scheme or path).")
	def(InvalidURL, 422, "A URL field (`download_url`, a webhook endpoint's `url`) is not an absolute `https` (or `http`) URL with a host; a webhook `url` must also have no user name or password, no fragment, and be `https` in live mode.")
	def(InvalidEmail, 422, "`contact_email` is not a valid email address.")
	def(InvalidCategory, 422, "`categories` is empty, lists a category twice, has more than 200 entries or an entry that is not a category key; or the `category` of POST /apps is not a lowercase key of 1 to 64 `a-z`, `0-9`, `-` (an empty string included: leave the field out instead).")
	def(InvalidAppcastURL, 422, "The `appcast_url` of POST /apps or PATCH /apps/{app_id} is not an absolute `https` (or `http`) URL with a host and no user name or password, of at most 2048 characters (an empty string included: leave the field out of a registration, send `null` to clear it).")
	def(FieldNotChangeable, 422, "PATCH /apps/{app_id} names a registration field other than `appcast_url`: `name`, `platform`, `bundle_id`, `domain`, `download_url`, `contact_email` (the vetting gate checked them) and `category` are set at registration only: register the app again with the new value (the message names the field).")
	def(UnknownCategory, 422, "A category key is not in the rate card.")
	def(BelowMinimum, 422, "An amount is under its documented minimum: `amount_cents` < 5000 on top-up, `daily_budget_cents` < 1000 on campaigns.")
	def(BelowMinimum, 409, "On payout: the withdrawable balance is under EUR 50 (5000 cents).")
	def(BidBelowFloor, 422, "`max_bid_cents` is under the campaign's floor (the highest floor of its categories on its app's platform).")
	def(InvalidDate, 422, "`from` or `to` is not a date of the form YYYY-MM-DD, or `since` (events) is not an RFC 3339 date-time.")
	def(InvalidRange, 422, "`from` is after `to`.")
	def(InvalidLimit, 422, "`limit` is not an integer from 1 to 1000 (1 to 100 for webhook attempts).")
	def(InvalidCursor, 422, "`cursor` was not issued by this endpoint for this app.")
	def(InvalidPeriod, 422, "`period` is not one of `last_7_days`, `last_30_days`, `last_90_days`.")
	def(DateRangeTooLong, 422, "GET /v1/stats/daily: `from` through `to` spans more than 366 days.")
	def(InvalidAmount, 422, "An amount is not a positive integer number of cents (non-zero for an adjustment), or is too large.")
	def(InvalidNote, 422, "An operator's note is too long (a ledger adjustment's: over 500 bytes; a complaint resolution's: over 500 characters), or holds a control or invisible formatting character (as listed under `invalid_characters`).")
	def(InvalidCampaignStatus, 422, "The `status` filter of GET /v1/campaigns is not one of `throttled`, `active`, `paused`.")
	def(InvalidAppStatus, 422, "The `status` filter of GET /v1/admin/apps is not one of `pending`, `approved`, `throttled`, `live`, `suspended`, `rejected`.")
	def(InvalidChainState, 422, "The `state` filter of GET /v1/chains is not one of `clicked`, `installed`, `activated_48h`, `cleared`, `refunded`, `rejected`.")
	def(InvalidRole, 422, "The `role` filter of GET /v1/chains is not one of `publisher`, `advertiser`.")
	def(InvalidPayoutAccount, 422, "`account_id` is not a connected payout account id (`acct_` followed by letters, digits or `_`).")

	def(InvalidEarnMode, 422, "`earn_mode` is not one of `cash`, `credits`.")
	def(EarnModeNotAllowed, 409, "The app is `suspended` or `rejected`; it cannot change its earn mode.")
	def(InvalidComplaintReason, 422, "`reason` of a complaint is not one of `misleading_ad`, `malware`, `broken_install`, `fraud`, `other`.")
	def(InvalidResolution, 422, "`resolution` of a complaint is not one of `upheld`, `dismissed`; or the `status` filter of the complaint lists is not one of `open`, `upheld`, `dismissed`.")
	def(ComplaintNotAllowed, 403, "The reporting app may not complain about this app: it is itself (an app cannot report itself), or it is `pending`, `suspended` or `rejected` and has no chain with the reported app (docs/apps.md, \"Complaints\").")
	def(ComplaintOpen, 409, "The reporting app already has an open complaint about this app; it can file another once an operator resolves it.")
	def(ComplaintResolved, 409, "The complaint was already resolved; a complaint is resolved once.")

	def(InvalidTransition, 409, "The requested status change is not allowed from the current status (e.g. approving a suspended app).")
	def(FloorCannotRise, 409, "A configured or requested floor is above the current floor; floors never rise.")
	def(BudgetExhausted, 409, "The campaign's daily budget cannot take this install: its escrow holds and charges of the UTC day plus the price would exceed `daily_budget_cents`.")
	def(PayoutAccountMissing, 409, "On payout: the app has no connected payout account.")
	def(PayoutInProgress, 409, "On payout: another payout of this app is still being processed.")
	def(PayoutNotAllowed, 409, "On payout: the app is `suspended` (until an operator reinstates it) or `rejected`; it cannot withdraw.")
	def(CheckoutExpired, 409, "The checkout session expired before it was paid; start a new top-up.")
	def(PaymentNotCredited, 409, "`POST /v1/stripe/webhook`: a refund or dispute of a top-up whose credit is not recorded yet (its own webhook is late); Stripe redelivers the event, which applies once the session is credited.")
	def(TestModeOnly, 403, "The operation exists only in test mode (the test checkout page, the test clock).")
	def(InvalidSignature, 400, "A payment processor's webhook (`POST /v1/stripe/webhook`) has no valid `Stripe-Signature`: missing or malformed, signed by no configured secret, or older (or newer) than 5 minutes.")
	def(InvalidPaymentHeader, 400, "The `X-PAYMENT` header is not a base64 JSON x402 payment payload.")

	def(X402NetworkMismatch, 422, "The x402 payment is not for what the challenge asks: another x402 version, scheme, network, or asset (its signature is for another token's EIP-712 domain).")
	def(X402WrongPayee, 422, "The x402 authorization's `to` is not the challenge's `payTo`.")
	def(X402WrongAmount, 422, "The x402 authorization's `value` is not exactly the challenge's `maxAmountRequired` (the quote for `amount_cents`), or, with a rate endpoint, not the amount of an unexpired challenge for this top-up.")
	def(X402Expired, 422, "The x402 authorization's `validBefore` has passed, or is less than 6 seconds away.")
	def(X402NotYetValid, 422, "The x402 authorization's `validAfter` is in the future.")
	def(X402WindowTooLong, 422, "The x402 authorization's `validBefore` is further away than the challenge's `maxTimeoutSeconds` (plus 60 seconds of clock skew): the quote lapses with the challenge.")
	def(X402BadSignature, 422, "The x402 authorization's signature does not recover to its `from` under the asset's EIP-712 domain.")
	def(X402Replayed, 409, "The x402 authorization (network, asset, `from`, `nonce`) was already settled and credited; sign a new one to top up again.")
	def(X402Pending, 409, "A settlement of this x402 authorization is under way or its outcome is not known yet; the reconciliation pass credits the wallet once if it settled. Do not sign another payment for it.")
	def(X402Pending, 502, "The facilitator did not answer the settlement (timeout, 5xx): it is recorded as pending and the reconciliation pass credits the wallet once if it settled on chain. Do not pay again.")
	def(X402SettlementFailed, 422, "The facilitator refused to verify or settle the x402 payment (e.g. `insufficient_funds`); nothing moved. `X-PAYMENT-RESPONSE` carries its reason when it came from settlement.")
	def(X402Unavailable, 503, "This server settles no x402 payments: no facilitator URL or `payTo` is configured, or the facilitator could not be reached before anything was sent for settlement; or its rate endpoint could not quote an x402 challenge. Nothing moved.")

	def(InvalidOperation, 422, "A ledger operation is malformed: no key, no postings, a zero amount, an unknown line type, or postings that do not sum to zero.")
	def(OperationKeyReused, 422, "A ledger operation key was used before for a different operation.")
	def(InsufficientFunds, 409, "The operation would take a wallet or escrow account below zero.")
	def(HoldNotFound, 404, "An escrow release or charge names a hold that does not exist.")
	def(HoldAlreadyResolved, 409, "The escrow hold was already released or charged; a hold resolves at most once.")
	def(HoldMismatch, 422, "An escrow release or charge disagrees with its hold (amount or advertiser).")
	def(LedgerAppendOnly, 500, "Something tried to update or delete a ledger row; the database refused it.")
	def(Conflict, 409, "A concurrent transaction touched the same rows; retry the request.")

	def(GateRecheckRefused, 409, "`POST /apps/{app_id}/gate/recheck`: the app is not one the gate rejected nor a pending one: an operator decided it (only an operator can send it back to review), or it is already approved, trading or suspended.")
	def(GateDomainTooYoung, 409, "`POST /apps/{app_id}/gate/recheck`: the gate rejected the app because its domain is less than six months old, and it still is; `retry_after` is the date the domain becomes eligible, when the gate checks again by itself. (Also a reason code of `Score.reasons`.)")
	def(GatePackageTooLarge, 422, "A vetting-gate reason (in `Score.reasons`, a gate job's `result` and `xpromo-server gate inspect`), not an error response: the download, or a part the gate reads, is over a bound — larger than the download limit, a decompressed file over 4 MiB, more than 100 000 zip entries (counted, or claimed by the end record) or a central directory over 64 MiB, a plist that unfolds to more than 1 000 000 objects, more than 65 536 PE resource entries, a compound file's FAT or directory over 16 MiB, more than 4 096 Mach-O load commands (docs/gate.md, Limits).")
	def(GatePackageTooDeep, 422, "A vetting-gate reason, not an error response: a structure in the package nests deeper than the gate reads — a plist, XML manifest or xar TOC more than 64 levels deep, a binary plist container that contains itself, a PE version resource below Windows' three levels, compound-file storages more than 64 deep (docs/gate.md, Limits).")
	def(GatePackageUnreadable, 422, "A vetting-gate reason, not an error response: the package is of a known format but damaged, truncated or inconsistent — a cyclic or broken FAT, DIFAT, directory or sibling-tree chain in a compound file, offsets outside the file, a lying zip header — or uses a part the gate does not read (the filesystem inside a `.dmg`).")
	def(ContactCodeInvalid, 422, "`POST /apps/{app_id}/contact/verify`: `code` is not the 6-digit code of the app's newest challenge (the message says how many attempts are left).")
	def(ContactCodeLocked, 409, "`POST /apps/{app_id}/contact/verify`: five wrong codes were tried against the challenge; its link still works, or ask for a new one (`contact/resend`).")
	def(ContactChallengeExpired, 409, "`POST /apps/{app_id}/contact/verify`: the newest challenge expired (24 hours) unanswered; ask for a new one (`contact/resend`).")
	def(ContactChallengeUsed, 409, "`POST /apps/{app_id}/contact/verify`: the newest challenge was already answered.")
	def(ContactNoChallenge, 409, "`POST /apps/{app_id}/contact/verify`: no challenge was mailed to the app yet (the gate sends one once the other checks pass; `contact/resend` sends one now).")
	def(ContactAlreadyVerified, 409, "`POST /apps/{app_id}/contact/resend`: the app's current contact address already answered a challenge.")
	def(ContactResendTooSoon, 429, "`POST /apps/{app_id}/contact/resend`: at most one challenge a minute and five a day go to an app; `retry_after` says when the next may.")
	def(ContactUndeliverable, 422, "`POST /apps/{app_id}/contact/resend`: the contact address cannot receive mail (the recipient's server refused it for good).")

	def(FraudTokenReused, 403, "The click token (offer nonce) was already used: a second click report or install claim with another token or countersignature, or a heartbeat whose `seq` is not above the last one accepted.")
	def(FraudTokenExpired, 403, "A time check failed: the click came after its offer lapsed (15 minutes), the install was claimed at or after the token's `exp` (15 minutes after the click) plus the tolerated clock skew, or a message (heartbeat, signed fill request) is dated too far from the server's clock.")
	def(FraudBadSignature, 403, "The click token (or heartbeat, or fill request `signature`) is malformed, uses an algorithm other than Ed25519, names an SDK key that is not registered to its app or is revoked, does not verify, carries an offer whose server MAC does not verify, or (a fill) signs other fields than the request's.")
	def(FraudBadCountersignature, 403, "The install countersignature is malformed, names an SDK key not registered to the claiming app (or revoked), does not verify, or is not bound to the presented click token.")
	def(FraudDatacenterASN, 403, "The install claim (or its click) came from an address of a datacenter or cloud network (IP-to-ASN table and configured datacenter ASNs and ranges).")
	def(FraudSelfPromotion, 403, "The publisher and the advertiser of the click are the same app (or share a bundle id).")
	def(FraudCTITTooShort, 403, "The install was claimed less than 10 seconds (configurable) after the click, by the device's clock.")
	def(FraudInstallVelocity, 403, "Too many installs were accepted from this device (3 per 24 hours) or this IP address (20 per hour) (both configurable).")
	def(FraudDeviceReused, 403, "This device already claimed an install of the same advertiser's app.")
	def(FraudAppMismatch, 403, "The countersigning app is not the advertiser the click token names.")
	def(InvalidPublicKey, 422, "`public_key` is not a 32-byte Ed25519 public key in unpadded base64url.")
	def(SDKKeyInUse, 409, "The SDK public key is registered to another app.")
	def(SDKKeyRevoked, 409, "The SDK key was revoked; a revoked key is never registered again (generate a new one).")
	def(TooManySDKKeys, 409, "The app already has 10 SDK keys that are not revoked; revoke one first.")
	def(InvalidSlot, 422, "`slot` of a fill is not one of `onboarding_complete`, `update_installed`, `about_window`, `settings_idle`, `before_quit`.")
	def(InvalidAppID, 422, "`app_id` of a fill is not an app id: 1 to 128 characters of `A-Z a-z 0-9 - _ . : ~`.")
	def(InvalidDeviceID, 422, "`device_id` of a fill is not 1 to 128 characters of `A-Z a-z 0-9 - _ . : ~`.")
	def(InvalidLocale, 422, "`locale` of a fill is not a BCP 47 language tag (subtags of 1 to 8 letters or digits joined by `-`) of at most 35 characters.")
	def(InvalidDuration, 422, "`seconds` is not an integer from 1 to 31536000 (one year), or `wait` (events) is not an integer from 0 to 30.")
	def(WebhookURLForbidden, 422, "A webhook endpoint's `url` names an IP address the server must not connect to (loopback, private, link-local, CGNAT, multicast, cloud metadata and the other special-purpose ranges), or a port other than 80 and 443. Host names are checked when each delivery connects (a refused address then fails the attempt with `forbidden_address`).")
	def(InvalidEventType, 422, "`events` of a webhook endpoint is empty, names a type twice or a type that does not exist; or the `type` filter of the events API names one that does not exist (docs/webhooks.md lists them).")
	def(TooManyWebhookEndpoints, 409, "The app already has 10 webhook endpoints; delete one first.")
	def(WebhookEndpointDisabled, 409, "Redelivery to a disabled webhook endpoint; enable it first (PATCH `status: enabled`).")
	def(GatePackageUnsupportedCompression, 422, "A vetting-gate reason, not an error response: a `.dmg` stores the part the gate reads in chunks of a type it does not know (raw, zero, zlib, bzip2, ADC, LZFSE/LZVN and LZMA are read), or an HFS+ file the gate reads is transparently compressed with a decmpfs type other than zlib, LZVN and LZFSE (3/4, 7/8, 11/12 are read); build the image as `UDZO` (zlib) or `UDBZ` (bzip2) (docs/gate.md, `.dmg`).")
	def(GatePackageAPFSUnsupported, 422, "A vetting-gate reason, not an error response: the `.dmg` holds an APFS volume, which the gate does not read yet; build the image with an HFS+ filesystem (`hdiutil create -fs HFS+`, electron-builder's default) (docs/gate.md, `.dmg`).")
	def(SignInLinkInvalid, 401, "A dashboard sign-in link was used already, has expired (links last 5 minutes) or never existed; mint a new one (`xpromo dashboard`, POST /v1/dashboard/sign-in-links).")
	def(SignInFailed, 401, "The dashboard's sign-in form got neither a valid API key nor this server's admin token.")
	def(GateSignatureRevoked, 422, "A vetting-gate reason (in `Score.reasons`, a gate job's `result` and `xpromo-server gate inspect`), not an error response: the package's signature verifies, but a certificate of its chain is revoked (OCSP or CRL) and the revocation rule rejects it — revoked for key compromise or with no reason given, or for another reason with no trusted timestamp before the revocation; sign again with a certificate that is not revoked (docs/gate.md, Revocation).")
}

// Known reports whether code is in the catalogue.
func Known(code string) bool { return len(catalogue[code]) > 0 }

// Status returns the default HTTP status for code (500 for unknown codes).
func Status(code string) int {
	if es := catalogue[code]; len(es) > 0 {
		return es[0].Status
	}
	return 500
}

// All returns every catalogued entry, sorted by code then status.
func All() []Entry {
	var out []Entry
	for _, es := range catalogue {
		out = append(out, es...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Code != out[j].Code {
			return out[i].Code < out[j].Code
		}
		return out[i].Status < out[j].Status
	})
	return out
}
