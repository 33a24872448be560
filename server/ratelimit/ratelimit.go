// Package ratelimit counts requests per key (or per IP on public endpoints)
// in fixed windows, in memory or in Redis so limits hold across instances.
package ratelimit
