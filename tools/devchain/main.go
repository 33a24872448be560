// Command x402-devchain is the local counterpart of an x402 facilitator and
// the chain it settles on, for tests and local runs of xpromo-server.
//
// It runs a private EVM chain in process (go-ethereum's simulated backend)
// with chain id 84532, Base Sepolia's, and with the DevUSDC token
// (token/DevUSDC.sol, an EIP-3009 token signing under Base Sepolia USDC's
// EIP-712 domain) placed at Base Sepolia's USDC address. On one loopback
// listener it serves:
//
//   - the x402 facilitator HTTP API: POST /verify, POST /settle, GET
//     /supported (x402 v1, scheme exact, network base-sepolia). /settle
//     sends transferWithAuthorization from the facilitator's own account and
//     mines it into a block at once;
//   - POST /rpc: Ethereum JSON-RPC to the chain, read methods only (eth_call,
//     eth_getLogs, eth_blockNumber, eth_chainId, eth_getTransactionReceipt,
//     eth_getBalance), what the server's reconciliation and tests read;
//   - POST /mint {"to":…, "value":…}: mints DevUSDC on chain (test wallets
//     get their funds this way; -fund does it at start).
//
// When ready it prints one JSON line on stdout: {"url": …, "rpc": …,
// "chainId": …, "network": …, "asset": …, "facilitator": <its address>}. It
// stops on SIGINT/SIGTERM or when its stdin closes (so a test's child never
// outlives the test).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address of the facilitator and RPC listener (loopback)")
	var funds fundFlags
	flag.Var(&funds, "fund", "address=amount: mint amount (atomic units) of DevUSDC to address at start (repeatable)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("x402-devchain: ")

	chain, err := newChain()
	if err != nil {
		log.Fatal(err)
	}
	defer chain.Close()
	for _, f := range funds {
		if _, err := chain.Mint(context.Background(), f.to, f.value); err != nil {
			log.Fatalf("funding %s: %v", f.to.Hex(), err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: newHandler(chain)}
	go func() {
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			log.Fatal(err)
		}
	}()
	base := "http://" + ln.Addr().String()
	ready, _ := json.Marshal(map[string]any{
		"url": base, "rpc": base + "/rpc", "chainId": chainID, "network": network,
		"asset": tokenAddress.Hex(), "facilitator": chain.from.Hex(),
	})
	fmt.Println(string(ready))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-stop:
	case <-stdinClosed:
	}
	srv.Close()
}

type fund struct {
	to    addr
	value string
}

type fundFlags []fund

func (f *fundFlags) String() string { return fmt.Sprint(*f) }

func (f *fundFlags) Set(s string) error {
	a, v, ok := strings.Cut(s, "=")
	to, err := parseAddr(a)
	if !ok || err != nil {
		return fmt.Errorf("want address=amount, got %q", s)
	}
	*f = append(*f, fund{to, v})
	return nil
}
