package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/notary"
	"github.com/xpromo/xpromo/server/gate/revocation"
	"github.com/xpromo/xpromo/server/outbound"
)

const gateUsage = `Usage:
  xpromo-server gate inspect FILE [--bundle-id ID] [--platform mac|win] [--roots-file PEM] [--notary-url URL|off] [--revocation on|off] [--json]

Reads a local package with the vetting gate's own readers and verifiers and
prints what the gate would record of it: format, identity, signer,
notarisation, each check's outcome and reason code, and the evidence.
Exit status 0 only when every check would pass, 1 when one fails.
`

// gateCommand runs `xpromo-server gate …`; only inspect exists.
func (p *program) gateCommand(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "inspect" {
		fmt.Fprint(p.stderr, gateUsage)
		return &usageError{msg: `gate: want the subcommand "inspect"`}
	}
	fs := flag.NewFlagSet("gate inspect", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	fs.Usage = func() { fmt.Fprint(p.stderr, gateUsage); fs.PrintDefaults() }
	bundleID := fs.String("bundle-id", "", "the bundle_id the app registers (default: the package's primary identifier)")
	platform := fs.String("platform", "", "the app's platform, mac or win (default: the package's)")
	rootsFile := fs.String("roots-file", p.env("XPROMO_GATE_ROOTS_FILE"), "PEM file of the code-signing roots, as the server's --gate-roots-file (env XPROMO_GATE_ROOTS_FILE); none: every signature is gate_untrusted_signer")
	notaryURL := fs.String("notary-url", p.env("XPROMO_GATE_NOTARY_URL"), "notarisation ticket lookup, as the server's --gate-notary-url (env XPROMO_GATE_NOTARY_URL; Apple's when empty); off: only a stapled ticket counts")
	revocationMode := fs.String("revocation", "on", "revocation checking of the signer's chain, as the server's --gate-revocation: on or off")
	asJSON := fs.Bool("json", false, "print the inspection as JSON")
	// The file may come before or after the flags.
	rest := args[1:]
	var file string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		file, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" || fs.NArg() > 1 {
		return &usageError{msg: "gate inspect: want one FILE"}
	}
	if *platform != "" && *platform != string(xpromo.PlatformMac) && *platform != string(xpromo.PlatformWin) {
		return &usageError{msg: "gate inspect: --platform is mac or win"}
	}
	var roots *x509.CertPool
	if *rootsFile != "" {
		r, err := gate.LoadRoots(*rootsFile)
		if err != nil {
			return &usageError{msg: err.Error()}
		}
		roots = r
	}
	var lookup gate.NotaryLookup
	if *notaryURL != "off" {
		lookup = &notary.Client{URL: *notaryURL, HTTP: outbound.New(outbound.Options{RequireHTTPS: true, Timeout: 20 * time.Second, MaxResponseBytes: notary.MaxAnswerBytes + 1})}
	}
	var checker gate.RevocationChecker
	switch *revocationMode {
	case "on":
		checker = &revocation.Client{Now: p.now, HTTP: outbound.New(outbound.Options{Timeout: 15 * time.Second, MaxResponseBytes: revocation.MaxCRLBytes + 1})}
	case "off":
	default:
		return &usageError{msg: "gate inspect: --revocation is on or off"}
	}
	ins, err := gate.Inspect(ctx, file, gate.InspectOptions{BundleID: *bundleID, Platform: xpromo.Platform(*platform), Roots: roots, Notary: lookup, Revocation: checker, Now: p.now})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(p.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ins); err != nil {
			return err
		}
	} else {
		printInspection(p.stdout, ins)
	}
	if !ins.Pass {
		return exitCode(exitFail)
	}
	return nil
}

func printInspection(w io.Writer, ins *gate.Inspection) {
	fmt.Fprintf(w, "file:       %s (%d bytes, sha256 %s)\n", ins.File, ins.Size, ins.SHA256)
	fmt.Fprintf(w, "registers:  bundle_id %q, platform %s\n", ins.BundleID, ins.Platform)
	if pk := ins.Package; pk != nil {
		fmt.Fprintf(w, "format:     %s (%s)\n", pk.Format, pk.Platform)
		if pk.Container != "" {
			fmt.Fprintf(w, "inside:     %s\n", pk.Container)
		}
		if d := pk.DiskImage; d != nil {
			fmt.Fprintf(w, "disk image: %s volume, chunks %s, app %q, image signature %v (verified %v %s), stapled ticket %v\n",
				d.Filesystem, strings.Join(d.Chunks, "+"), d.AppPath, d.Signed, d.SignatureVerified, d.Signer, d.NotaryTicket)
		}
		fmt.Fprintf(w, "identity:   %q", pk.BundleIDs)
		if pk.Name != "" {
			fmt.Fprintf(w, " name %q", pk.Name)
		}
		if pk.Version != "" {
			fmt.Fprintf(w, " version %q", pk.Version)
		}
		if pk.Publisher != "" {
			fmt.Fprintf(w, " publisher %q", pk.Publisher)
		}
		fmt.Fprintln(w)
	}
	if sg := ins.Signature; sg != nil {
		fmt.Fprintf(w, "signer:     %s (%s)\n", sg.SignerSubject, sg.Kind)
		fmt.Fprintf(w, "issuer:     %s\n", sg.SignerIssuer)
		fmt.Fprintf(w, "leaf:       sha256 %s\n", sg.SignerSHA256)
		if sg.SigningIdentity != "" {
			fmt.Fprintf(w, "identifier: %s (team %s)\n", sg.SigningIdentity, sg.TeamID)
		}
		if sg.Kind == "macho" {
			fmt.Fprintf(w, "notarised:  %v\n", sg.Notarized)
		}
		if sg.Timestamp != nil {
			fmt.Fprintf(w, "timestamp:  %s\n", sg.Timestamp.Format("2006-01-02T15:04:05Z07:00"))
		}
		if sg.RevocationStatus != "" {
			fmt.Fprintf(w, "revocation: %s (%s", sg.RevocationStatus, sg.RevocationSource)
			if sg.RevocationURL != "" {
				fmt.Fprintf(w, " %s", sg.RevocationURL)
			}
			fmt.Fprint(w, ")")
			if sg.RevokedAt != nil {
				fmt.Fprintf(w, " %s at %s", sg.RevocationReason, sg.RevokedAt.Format("2006-01-02T15:04:05Z07:00"))
			}
			if sg.RevocationDetail != "" {
				fmt.Fprintf(w, ": %s", sg.RevocationDetail)
			}
			fmt.Fprintln(w)
		}
	}
	for _, c := range ins.Checks {
		outcome := "pass"
		if !c.Passed {
			outcome = "FAIL"
		}
		fmt.Fprintf(w, "%-12s %s", c.Check+":", outcome)
		for _, r := range c.Reasons {
			fmt.Fprintf(w, " %s", r)
		}
		fmt.Fprintln(w)
	}
	codes := make([]string, 0, len(ins.Details))
	for c := range ins.Details {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "  %s: %s\n", c, ins.Details[c])
	}
	if ins.Pass {
		fmt.Fprintln(w, "OK: the gate would record bundle_match and signed as passed")
	} else {
		fmt.Fprintln(w, "FAIL: the gate would reject this package")
	}
}
