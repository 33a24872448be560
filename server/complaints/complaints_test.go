package complaints

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
)

// A refused input is refused before any transaction starts, with its code
// and field. (Behaviour on a store: server/storetest and server/assembly.)
func TestInputIsCheckedFirst(t *testing.T) {
	noTx := func(context.Context, func(context.Context, Tx) error) error {
		t.Fatal("a refused input must not reach the store")
		return nil
	}
	s := &Service{Update: noTx, View: noTx, Now: time.Now}
	ctx := context.Background()
	check := func(err error, code, field string) {
		t.Helper()
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != code || e.Field != field {
			t.Errorf("got %v, want %s on %q", err, code, field)
		}
	}
	file := func(p FileParams) error { _, err := s.File(ctx, "app_r", p); return err }
	check(file(FileParams{Reason: "fraud"}), apperr.MissingField, "app_id")
	check(file(FileParams{AppID: "app_x"}), apperr.MissingField, "reason")
	check(file(FileParams{AppID: "app_x", Reason: "spam"}), apperr.InvalidComplaintReason, "reason")
	check(file(FileParams{AppID: "app_x", Reason: "Fraud"}), apperr.InvalidComplaintReason, "reason")
	check(file(FileParams{AppID: "app_x", Reason: "other", Detail: strings.Repeat("é", MaxDetail+1)}), apperr.TooLong, "detail")
	check(file(FileParams{AppID: "app_x", Reason: "other", Detail: "a\u202eb"}), apperr.InvalidCharacters, "detail")

	resolve := func(res, note string) error { _, err := s.Resolve(ctx, "cmpl_1", res, note); return err }
	check(resolve("", ""), apperr.MissingField, "resolution")
	check(resolve("open", ""), apperr.InvalidResolution, "resolution")
	check(resolve("upheld", strings.Repeat("n", MaxNote+1)), apperr.InvalidNote, "note")
	check(resolve("upheld", "a\tb"), apperr.InvalidNote, "note")

	_, _, err := s.List(ctx, "closed", nil, 10)
	check(err, apperr.InvalidResolution, "status")
	for _, limit := range []int{0, -1, MaxLimit + 1} {
		_, _, err = s.List(ctx, "", nil, limit)
		check(err, apperr.InvalidLimit, "limit")
		_, err = s.Mine(ctx, "app_r", limit)
		check(err, apperr.InvalidLimit, "limit")
	}
}

// Detail counts characters, not bytes: 2000 two-byte characters fit.
func TestDetailLimitIsCharacters(t *testing.T) {
	if err := validate(FileParams{AppID: "app_x", Reason: "other", Detail: strings.Repeat("é", MaxDetail)}); err != nil {
		t.Fatal(err)
	}
}
