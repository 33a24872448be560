package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/cli/internal/config"
)

func (r *runner) configCommand() *cobra.Command {
	cmd := group("config", "the config file's profiles: show the settings in use, set one",
		r.configShowCommand(), r.configSetCommand())
	cmd.Long = `Settings are picked, each on its own, from the first of: the flag (--base-url,
--api-key, --admin-token, --app-id), the environment (XPROMO_BASE_URL,
XPROMO_API_KEY, XPROMO_ADMIN_TOKEN, XPROMO_APP_ID), the profile in the config
file, and the default (base URL ` + config.DefaultBaseURL + `). The profile is
--profile, else XPROMO_PROFILE, else "default". The file is XPROMO_CONFIG, else
<user config dir>/xpromo/config.json, written with mode 0600 in a 0700 directory.`
	return cmd
}

func (r *runner) configShowCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "the settings in use and where each comes from (secrets masked)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := r.load(); err != nil {
				return err
			}
			s := r.settings
			type shown struct {
				Value  string        `json:"value"`
				Source config.Source `json:"source"`
			}
			show := func(v config.Setting, secret bool) shown {
				if secret {
					v.Value = config.Mask(v.Value)
				}
				return shown{v.Value, v.Source}
			}
			view := struct {
				ConfigFile string   `json:"config_file"`
				Profiles   []string `json:"profiles"`
				Profile    shown    `json:"profile"`
				BaseURL    shown    `json:"base_url"`
				AppID      shown    `json:"app_id"`
				APIKey     shown    `json:"api_key"`
				AdminToken shown    `json:"admin_token"`
			}{
				ConfigFile: r.cfgPath, Profiles: r.file.Names(),
				Profile: show(s.Profile, false), BaseURL: show(s.BaseURL, false), AppID: show(s.AppID, false),
				APIKey: show(s.APIKey, true), AdminToken: show(s.AdminToken, true),
			}
			if r.g.json {
				return writeJSON(r.env.Stdout, view)
			}
			line := func(v shown) string {
				if v.Value == "" {
					return "-"
				}
				return v.Value + "  (" + string(v.Source) + ")"
			}
			profiles := "-"
			if len(view.Profiles) > 0 {
				profiles = joinComma(view.Profiles)
			}
			return kv(r.env.Stdout,
				[2]string{"config_file", view.ConfigFile},
				[2]string{"profiles", profiles},
				[2]string{"profile", line(view.Profile)},
				[2]string{"base_url", line(view.BaseURL)},
				[2]string{"app_id", line(view.AppID)},
				[2]string{"api_key", line(view.APIKey)},
				[2]string{"admin_token", line(view.AdminToken)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

// configFields are the profile fields `config set` writes.
var configFields = map[string]func(p *config.Profile, v string){
	"base_url":    func(p *config.Profile, v string) { p.BaseURL = v },
	"app_id":      func(p *config.Profile, v string) { p.AppID = v },
	"api_key":     func(p *config.Profile, v string) { p.APIKey = v },
	"admin_token": func(p *config.Profile, v string) { p.AdminToken = v },
}

func (r *runner) configSetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set <base_url|app_id|api_key|admin_token> <value|->",
		Short: "set a field of the profile in use (\"-\" reads the value from stdin; \"\" clears it)",
		Long: `Sets one field of the profile in use. Pass secrets as "-" to read them from
stdin, so they stay out of the shell history:

  printf %s "$TOKEN" | xpromo config set admin_token -`,
		Args: exactArgsAllowEmpty("<field>", "<value>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, ok := configFields[args[0]]
			if !ok {
				return usageErr("unknown field %q: one of base_url, app_id, api_key, admin_token", args[0])
			}
			value := args[1]
			if value == "-" {
				line, err := bufio.NewReader(r.env.Stdin).ReadString('\n')
				if err != nil && line == "" {
					return usageErr("reading the value from stdin: %v", err)
				}
				value = strings.TrimSpace(line)
			}
			if err := r.saveProfile(func(p *config.Profile) { set(p, value) }); err != nil {
				return err
			}
			if r.g.json {
				return writeJSON(r.env.Stdout, map[string]string{"profile": r.settings.Profile.Value, "field": args[0], "config_file": r.cfgPath})
			}
			fmt.Fprintf(r.env.Stdout, "%s saved to profile %q in %s\n", args[0], r.settings.Profile.Value, r.cfgPath)
			return nil
		},
	}
}

// exactArgsAllowEmpty wants exactly the named arguments; they may be empty.
func exactArgsAllowEmpty(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr("%s needs %s", cmd.CommandPath(), strings.Join(names, " "))
		}
		return nil
	}
}
