package cli

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

func (r *runner) keysCommand() *cobra.Command {
	return group("keys", "SDK signing keys",
		group("sdk", "the app's SDK keys: the Ed25519 keys its SDK signs attribution with",
			r.keysSDKNewCommand(), r.keysSDKRegisterCommand(), r.keysSDKListCommand(), r.keysSDKRevokeCommand()))
}

func (r *runner) keysSDKNewCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "new [--out FILE]",
		Short: "make an SDK key pair: the private key to a new file (0600), the public key printed",
		Long: `Generates an Ed25519 SDK key pair on this machine. The private key is written
as PEM (PKCS #8) to a new file, mode 0600, never overwriting one (default
<key_id>.pem in the current directory); it ships inside your app. The key id and
public key are printed; register the public key with
"xpromo keys sdk register --key-file FILE". Nothing is sent to the server.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kp, err := attribution.GenerateKey(nil)
			if err != nil {
				return err
			}
			pemBytes, err := attribution.MarshalPrivateKey(kp.Private)
			if err != nil {
				return err
			}
			if out == "" {
				out = kp.ID + ".pem"
			}
			if err := writeNewFile(out, pemBytes); err != nil {
				return err
			}
			pub := attribution.EncodePublicKey(kp.Public)
			if r.g.json {
				return writeJSON(r.env.Stdout, map[string]string{"key_id": kp.ID, "public_key": pub, "private_key_file": out})
			}
			if err := kv(r.env.Stdout,
				[2]string{"key_id", kp.ID},
				[2]string{"public_key", pub},
				[2]string{"private_key_file", out + " (mode 0600; keep it secret)"},
			); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Stderr, "Register the public key with: xpromo keys sdk register --key-file %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the private key to (must not exist; default <key_id>.pem)")
	return cmd
}

// writeNewFile creates path with mode 0600 and data; an existing file is
// an error, never overwritten.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return localErr(codeFile, ExitOther, "%s exists; it is never overwritten (choose another --out)", path)
	}
	if err != nil {
		return localErr(codeFile, ExitOther, "%v", err)
	}
	// The umask may have taken bits off, never added any; make it exactly 0600.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return localErr(codeFile, ExitOther, "%v", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return localErr(codeFile, ExitOther, "%v", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return localErr(codeFile, ExitOther, "%v", err)
	}
	if err := f.Close(); err != nil {
		return localErr(codeFile, ExitOther, "%v", err)
	}
	return nil
}

func (r *runner) keysSDKRegisterCommand() *cobra.Command {
	var keyFile, publicKey string
	cmd := &cobra.Command{
		Use:   "register (--key-file FILE | --public-key KEY) [--app-id ID]",
		Short: "register an SDK public key with the app (POST /v1/apps/{app_id}/sdk-keys)",
		Long: `Registers the public half of an SDK key pair, read from the private key file
of "xpromo keys sdk new" (only the public key is sent) or given as --public-key
(unpadded base64url of the 32 bytes).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (keyFile == "") == (publicKey == "") {
				return usageErr("give exactly one of --key-file and --public-key")
			}
			var pub ed25519.PublicKey
			if keyFile != "" {
				data, err := os.ReadFile(keyFile)
				if err != nil {
					return localErr(codeFile, ExitOther, "%v", err)
				}
				priv, err := attribution.ParsePrivateKey(data)
				if err != nil {
					return localErr(codeFile, ExitOther, "%s: %v", keyFile, err)
				}
				pub = priv.Public().(ed25519.PublicKey)
			} else {
				p, err := attribution.ParsePublicKey(publicKey)
				if err != nil {
					return usageErr("--public-key: %v", err)
				}
				pub = p
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			key, err := c.RegisterSDKKey(cmd.Context(), appID, &xpromo.RegisterSDKKeyRequest{PublicKey: attribution.EncodePublicKey(pub)})
			if err != nil {
				return err
			}
			if want := attribution.KeyID(pub); key.KeyID != want {
				return fmt.Errorf("the server registered key id %s, but the key's id is %s", key.KeyID, want)
			}
			if r.g.json {
				return r.writeRaw()
			}
			return printSDKKeys(r, []xpromo.SDKKey{*key})
		},
	}
	r.addAppIDFlag(cmd)
	cmd.Flags().StringVar(&keyFile, "key-file", "", "private key file of `xpromo keys sdk new` (the public key is derived; nothing secret is sent)")
	cmd.Flags().StringVar(&publicKey, "public-key", "", "the public key, unpadded base64url")
	return cmd
}

func (r *runner) keysSDKListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--app-id ID]",
		Short: "the app's registered SDK keys (GET /v1/apps/{app_id}/sdk-keys)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			list, err := c.ListSDKKeys(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return printSDKKeys(r, list.Keys)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) keysSDKRevokeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke <key_id> [--app-id ID]",
		Short: "revoke an SDK key: what it signs is refused from now on (POST /v1/apps/{app_id}/sdk-keys/{key_id}/revoke)",
		Args:  exactArgs("<key_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			key, err := c.RevokeSDKKey(cmd.Context(), appID, args[0])
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return printSDKKeys(r, []xpromo.SDKKey{*key})
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func printSDKKeys(r *runner, keys []xpromo.SDKKey) error {
	t := newTable(r.env.Stdout)
	t.row("KEY_ID", "PUBLIC_KEY", "CREATED_AT", "REVOKED_AT")
	for _, k := range keys {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = ts(*k.RevokedAt)
		}
		t.row(k.KeyID, k.PublicKey, ts(k.CreatedAt), revoked)
	}
	return t.flush()
}
