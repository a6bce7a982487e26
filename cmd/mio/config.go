package main

import (
	"errors"
	"flag"
	"io"

	"github.com/miohq/mio/config"
)

// loadConfig loads the configuration for a command; a bad value is a usage
// error naming the setting.
func loadConfig(name string, args []string, getenv env, stderr io.Writer) (*config.Config, []string, error) {
	return loadConfigWith(name, args, getenv, stderr, nil)
}

// loadConfigWith also registers a command's own flags.
func loadConfigWith(name string, args []string, getenv env, stderr io.Writer, register func(*flag.FlagSet)) (*config.Config, []string, error) {
	cfg, rest, err := config.LoadWith("mio "+name, args, getenv, stderr, register)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, &usageError{err.Error()}
	}
	return cfg, rest, nil
}

// loadConfigOnly is loadConfigWith accepting only the named configuration
// flags: any other flag is a usage error.
func loadConfigOnly(name string, args []string, getenv env, stderr io.Writer, register func(*flag.FlagSet), flags ...string) (*config.Config, []string, error) {
	cfg, rest, err := config.LoadOnly("mio "+name, args, getenv, stderr, register, flags...)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, &usageError{err.Error()}
	}
	return cfg, rest, nil
}
