package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCommandLineRefusals(t *testing.T) {
	env := func(token string) func(string) string {
		return func(k string) string {
			if k == "XPROMO_ADMIN_TOKEN" {
				return token
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name, token, want string
		args              []string
	}{
		{"unknown scenario", "tok", `unknown scenario "fil"`, []string{"-scenario", "fill,fil"}},
		{"no admin token", "", "XPROMO_ADMIN_TOKEN", []string{"-scenario", "fill"}},
		{"bad flag", "tok", "flag provided but not defined", []string{"-nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, env(tc.token), &out, &errOut)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut.String(), tc.want)
			assert.Empty(t, out.String())
		})
	}
}
