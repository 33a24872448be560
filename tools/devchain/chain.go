package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/rpc"
)

// The chain is Base Sepolia's twin: its chain id, and DevUSDC at USDC's
// address, so a payment signed for Base Sepolia's USDC settles here.
const (
	chainID = 84532
	network = "base-sepolia"
)

var tokenAddress = common.HexToAddress("0x036CbD53842c5426634e7929541eC2318f3dCF7e")

//go:embed token/DevUSDC.bin-runtime
var tokenRuntime string

//go:embed token/DevUSDC.abi.json
var tokenABI string

type addr = common.Address

func parseAddr(s string) (addr, error) {
	if !common.IsHexAddress(s) || !strings.HasPrefix(s, "0x") {
		return addr{}, fmt.Errorf("%q is not an address", s)
	}
	return common.HexToAddress(s), nil
}

// chain is the simulated chain and the facilitator's account on it. Every
// transaction is sent and mined under mu, one block each, so that a settle
// sees every earlier one.
type chain struct {
	mu     sync.Mutex
	sim    *simulated.Backend
	client simulated.Client
	rpc    *rpc.Client
	key    *ecdsa.PrivateKey
	from   common.Address
	token  abi.ABI
	signer types.Signer
}

func newChain() (*chain, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	token, err := abi.JSON(strings.NewReader(tokenABI))
	if err != nil {
		return nil, fmt.Errorf("DevUSDC ABI: %w", err)
	}
	ether := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	alloc := types.GenesisAlloc{
		from:         {Balance: new(big.Int).Mul(big.NewInt(1000), ether)},
		tokenAddress: {Code: common.FromHex(strings.TrimSpace(tokenRuntime)), Balance: new(big.Int)},
	}
	// The chain's own JSON-RPC listens on a loopback port of its own (the
	// simulated client hides its RPC client); /rpc forwards its read
	// methods there.
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	sim := simulated.NewBackend(alloc, func(nc *node.Config, ec *ethconfig.Config) {
		nc.HTTPHost, nc.HTTPPort, nc.HTTPModules = "127.0.0.1", port, []string{"eth"}
		cfg := *ec.Genesis.Config
		cfg.ChainID = big.NewInt(chainID)
		ec.Genesis.Config = &cfg
		ec.NetworkId = chainID
	})
	raw, err := rpc.DialHTTP(fmt.Sprintf("http://127.0.0.1:%d", port))
	if err != nil {
		sim.Close()
		return nil, err
	}
	return &chain{sim: sim, client: sim.Client(), rpc: raw, key: key, from: from, token: token,
		signer: types.LatestSignerForChainID(big.NewInt(chainID))}, nil
}

func (c *chain) Close() error { c.rpc.Close(); return c.sim.Close() }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// send sends a call of the token from the facilitator's account, mines it
// and returns its receipt. The caller holds mu.
func (c *chain) send(ctx context.Context, data []byte) (*types.Receipt, error) {
	nonce, err := c.client.PendingNonceAt(ctx, c.from)
	if err != nil {
		return nil, err
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	tip := big.NewInt(1_000_000_000)
	fee := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignNewTx(c.key, c.signer, &types.DynamicFeeTx{
		ChainID: big.NewInt(chainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: fee, Gas: 300_000,
		To: &tokenAddress, Data: data,
	})
	if err != nil {
		return nil, err
	}
	if err := c.client.SendTransaction(ctx, tx); err != nil {
		return nil, err
	}
	c.sim.Commit()
	return c.client.TransactionReceipt(ctx, tx.Hash())
}

// call runs a read-only call of the token's method and unpacks its results.
func (c *chain) call(ctx context.Context, method string, args ...any) ([]any, error) {
	data, err := c.token.Pack(method, args...)
	if err != nil {
		return nil, err
	}
	out, err := c.client.CallContract(ctx, ethereum.CallMsg{From: c.from, To: &tokenAddress, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	return c.token.Unpack(method, out)
}

// Mint mints value (decimal atomic units) of DevUSDC to to.
func (c *chain) Mint(ctx context.Context, to common.Address, value string) (common.Hash, error) {
	v, ok := new(big.Int).SetString(value, 10)
	if !ok || v.Sign() <= 0 {
		return common.Hash{}, fmt.Errorf("amount %q: want a positive integer", value)
	}
	data, err := c.token.Pack("mint", to, v)
	if err != nil {
		return common.Hash{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.send(ctx, data)
	if err != nil {
		return common.Hash{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return r.TxHash, errors.New("mint reverted")
	}
	return r.TxHash, nil
}

// typedDataDigest is the EIP-712 digest of a TransferWithAuthorization
// under DevUSDC's domain, encoded with go-ethereum's ABI encoder.
func typedDataDigest(from, to common.Address, value, after, before *big.Int, nonce [32]byte) []byte {
	typeHash := crypto.Keccak256([]byte("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
	domainHash := crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	args := abi.Arguments{{Type: mustType("bytes32")}, {Type: mustType("bytes32")}, {Type: mustType("bytes32")}, {Type: mustType("uint256")}, {Type: mustType("address")}}
	dom, _ := args.Pack([32]byte(domainHash), [32]byte(crypto.Keccak256([]byte("USDC"))), [32]byte(crypto.Keccak256([]byte("2"))), big.NewInt(chainID), tokenAddress)
	sargs := abi.Arguments{{Type: mustType("bytes32")}, {Type: mustType("address")}, {Type: mustType("address")}, {Type: mustType("uint256")}, {Type: mustType("uint256")}, {Type: mustType("uint256")}, {Type: mustType("bytes32")}}
	st, _ := sargs.Pack([32]byte(typeHash), from, to, value, after, before, nonce)
	return crypto.Keccak256([]byte{0x19, 0x01}, crypto.Keccak256(dom), crypto.Keccak256(st))
}

func mustType(t string) abi.Type {
	ty, err := abi.NewType(t, "", nil)
	if err != nil {
		panic(err)
	}
	return ty
}

// recoverSigner returns the address that signed digest with sig (r‖s‖v).
func recoverSigner(digest, sig []byte) (common.Address, error) {
	if len(sig) != 65 {
		return common.Address{}, errors.New("signature is not 65 bytes")
	}
	s := bytes.Clone(sig)
	if s[64] >= 27 {
		s[64] -= 27
	}
	pub, err := crypto.SigToPub(digest, s)
	if err != nil {
		return common.Address{}, err
	}
	return crypto.PubkeyToAddress(*pub), nil
}
