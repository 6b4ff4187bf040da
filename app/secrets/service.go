package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/godbus/dbus/v5"
)

// The Secret Service API (freedesktop.org): a service on the session bus
// holding collections of items, each a secret value with a label and
// lookup attributes. The engine keeps one item per secret in the default
// collection, found by its attributes.
const (
	ssName       = "org.freedesktop.secrets"
	ssPath       = dbus.ObjectPath("/org/freedesktop/secrets")
	ssService    = "org.freedesktop.Secret.Service"
	ssCollection = "org.freedesktop.Secret.Collection"
	ssItem       = "org.freedesktop.Secret.Item"
	ssPrompt     = "org.freedesktop.Secret.Prompt"
	// attrApp, attrScope and attrName are the attributes of our items.
	attrApp   = "application"
	attrScope = "senclaw-engine"
	attrName  = "senclaw-secret"
	appName   = "senclaw"
)

// errNoService says that no Secret Service answers: the store keeps the
// value instead.
var errNoService = errors.New("no Secret Service answers on the session bus")

// callTimeout bounds each call; promptTimeout the wait for a person to
// unlock the keyring.
const (
	callTimeout   = 5 * time.Second
	promptTimeout = 2 * time.Minute
)

// service is a connection to the Secret Service at addr, opened per use.
type service struct{ addr string }

// ssSecret is the Secret struct of the API: (oayays).
type ssSecret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// session is an open Secret Service session with its transport key.
type session struct {
	conn *dbus.Conn
	path dbus.ObjectPath
	key  []byte // AES-128 (dh-ietf1024-sha256-aes128-cbc-pkcs7)
}

// open connects and opens an encrypted session. Any failure to reach a
// service is errNoService.
func (s *service) open(ctx context.Context) (*session, error) {
	if s.addr == "" {
		return nil, errNoService
	}
	conn, err := dbus.Connect(s.addr)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", errNoService, err)
	}
	var has bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, ssName).Store(&has); err != nil || !has {
		var act []string
		_ = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&act)
		if !contains(act, ssName) {
			conn.Close()
			return nil, errNoService
		}
	}
	priv, pub, err := dhKeys()
	if err != nil {
		conn.Close()
		return nil, err
	}
	var out dbus.Variant
	var path dbus.ObjectPath
	err = conn.Object(ssName, ssPath).CallWithContext(ctx, ssService+".OpenSession", 0, "dh-ietf1024-sha256-aes128-cbc-pkcs7", dbus.MakeVariant(pub)).Store(&out, &path)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w (opening a session: %v)", errNoService, err)
	}
	peer, ok := out.Value().([]byte)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("the Secret Service answered OpenSession with %s, not a key", out.Signature())
	}
	key, err := dhAESKey(priv, peer)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &session{conn: conn, path: path, key: key}, nil
}

func (se *session) close() {
	_ = se.conn.Object(ssName, se.path).Call("org.freedesktop.Secret.Session.Close", 0).Err
	se.conn.Close()
}

func attributes(scope, name string) map[string]string {
	return map[string]string{attrApp: appName, attrScope: scope, attrName: name}
}

// store puts value into the default collection, replacing the item of
// the same name.
func (s *service) store(scope, name string, value []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), promptTimeout)
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, callTimeout)
	se, err := s.open(cctx)
	ccancel()
	if err != nil {
		return err
	}
	defer se.close()
	coll, err := se.defaultCollection(ctx)
	if err != nil {
		return err
	}
	if err := se.unlock(ctx, []dbus.ObjectPath{coll}); err != nil {
		return err
	}
	secret, err := se.encrypt(value)
	if err != nil {
		return err
	}
	props := map[string]dbus.Variant{
		ssItem + ".Label":      dbus.MakeVariant("SenClaw Sandbox secret " + name),
		ssItem + ".Attributes": dbus.MakeVariant(attributes(scope, name)),
	}
	var item, prompt dbus.ObjectPath
	if err := se.call(ctx, coll, ssCollection+".CreateItem", props, secret, true).Store(&item, &prompt); err != nil {
		return fmt.Errorf("creating the keyring item: %w", err)
	}
	if _, err := se.prompt(ctx, prompt); err != nil {
		return err
	}
	return nil
}

// lookup reads the value of the item of name. A locked item is not
// unlocked here: a run does not wait for a person.
func (s *service) lookup(scope, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	se, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	defer se.close()
	unlocked, locked, err := se.search(ctx, scope, name)
	if err != nil {
		return nil, err
	}
	if len(unlocked) == 0 {
		if len(locked) > 0 {
			return nil, errors.New("the keyring is locked: unlock it (log in to the desktop, or open Passwords and Keys) and run again")
		}
		return nil, errors.New("its keyring item is gone: add the secret again (senclaw secrets rm, then add)")
	}
	var sec ssSecret
	if err := se.call(ctx, unlocked[0], ssItem+".GetSecret", se.path).Store(&sec); err != nil {
		return nil, fmt.Errorf("reading the keyring item: %w", err)
	}
	return se.decrypt(sec)
}

// remove deletes the items of name.
func (s *service) remove(scope, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), promptTimeout)
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, callTimeout)
	se, err := s.open(cctx)
	ccancel()
	if err != nil {
		return err
	}
	defer se.close()
	unlocked, locked, err := se.search(ctx, scope, name)
	if err != nil {
		return err
	}
	if len(locked) > 0 {
		if err := se.unlock(ctx, locked); err != nil {
			return err
		}
	}
	for _, item := range append(unlocked, locked...) {
		var prompt dbus.ObjectPath
		if err := se.call(ctx, item, ssItem+".Delete").Store(&prompt); err != nil {
			return fmt.Errorf("deleting the keyring item: %w", err)
		}
		if _, err := se.prompt(ctx, prompt); err != nil {
			return err
		}
	}
	return nil
}

func (se *session) call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return se.conn.Object(ssName, path).CallWithContext(cctx, method, 0, args...)
}

func (se *session) search(ctx context.Context, scope, name string) (unlocked, locked []dbus.ObjectPath, err error) {
	if err := se.call(ctx, ssPath, ssService+".SearchItems", attributes(scope, name)).Store(&unlocked, &locked); err != nil {
		return nil, nil, fmt.Errorf("searching the keyring: %w", err)
	}
	return unlocked, locked, nil
}

// defaultCollection is the collection behind the "default" alias, made
// (with the service's own prompt) when there is none.
func (se *session) defaultCollection(ctx context.Context) (dbus.ObjectPath, error) {
	var coll dbus.ObjectPath
	if err := se.call(ctx, ssPath, ssService+".ReadAlias", "default").Store(&coll); err != nil {
		return "", fmt.Errorf("finding the default keyring: %w", err)
	}
	if coll != "/" {
		return coll, nil
	}
	props := map[string]dbus.Variant{ssCollection + ".Label": dbus.MakeVariant("Default keyring")}
	var prompt dbus.ObjectPath
	if err := se.call(ctx, ssPath, ssService+".CreateCollection", props, "default").Store(&coll, &prompt); err != nil {
		return "", fmt.Errorf("making the default keyring: %w", err)
	}
	if coll == "/" {
		res, err := se.prompt(ctx, prompt)
		if err != nil {
			return "", err
		}
		if p, ok := res.Value().(dbus.ObjectPath); ok {
			coll = p
		}
	}
	if coll == "/" {
		return "", errors.New("the Secret Service made no default keyring")
	}
	return coll, nil
}

func (se *session) unlock(ctx context.Context, objects []dbus.ObjectPath) error {
	var done []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := se.call(ctx, ssPath, ssService+".Unlock", objects).Store(&done, &prompt); err != nil {
		return fmt.Errorf("unlocking the keyring: %w", err)
	}
	_, err := se.prompt(ctx, prompt)
	return err
}

// prompt shows the service's prompt (a person unlocks or confirms) and
// waits for it; "/" is no prompt.
func (se *session) prompt(ctx context.Context, prompt dbus.ObjectPath) (dbus.Variant, error) {
	if prompt == "/" || prompt == "" {
		return dbus.Variant{}, nil
	}
	signals := make(chan *dbus.Signal, 4)
	se.conn.Signal(signals)
	defer se.conn.RemoveSignal(signals)
	match := []dbus.MatchOption{dbus.WithMatchObjectPath(prompt), dbus.WithMatchInterface(ssPrompt), dbus.WithMatchMember("Completed")}
	if err := se.conn.AddMatchSignalContext(ctx, match...); err != nil {
		return dbus.Variant{}, err
	}
	defer se.conn.RemoveMatchSignal(match...)
	if err := se.call(ctx, prompt, ssPrompt+".Prompt", "").Err; err != nil {
		return dbus.Variant{}, fmt.Errorf("showing the keyring's prompt: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			_ = se.call(context.Background(), prompt, ssPrompt+".Dismiss").Err
			return dbus.Variant{}, errors.New("nobody answered the keyring's prompt in time")
		case sig := <-signals:
			if sig.Path != prompt || sig.Name != ssPrompt+".Completed" || len(sig.Body) < 2 {
				continue
			}
			if dismissed, _ := sig.Body[0].(bool); dismissed {
				return dbus.Variant{}, errors.New("the keyring's prompt was dismissed")
			}
			v, _ := sig.Body[1].(dbus.Variant)
			return v, nil
		}
	}
}

// The session's transport encryption: Diffie-Hellman over the 1024-bit
// MODP group of RFC 2409 (the second Oakley group), HKDF-SHA256 to an
// AES-128 key, AES-CBC with PKCS#7 padding. The value crosses the bus
// encrypted, so nothing listening on the bus reads it.
var (
	dhPrime = func() *big.Int {
		p, _ := new(big.Int).SetString("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
		return p
	}()
	dhGenerator = big.NewInt(2)
)

const dhBytes = 128

func dhKeys() (priv *big.Int, pub []byte, err error) {
	b := make([]byte, dhBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, nil, err
	}
	priv = new(big.Int).SetBytes(b)
	return priv, new(big.Int).Exp(dhGenerator, priv, dhPrime).Bytes(), nil
}

func dhAESKey(priv *big.Int, peer []byte) ([]byte, error) {
	y := new(big.Int).SetBytes(peer)
	if y.Cmp(big.NewInt(1)) <= 0 || y.Cmp(new(big.Int).Sub(dhPrime, big.NewInt(1))) >= 0 {
		return nil, errors.New("the Secret Service sent an invalid session key")
	}
	shared := new(big.Int).Exp(y, priv, dhPrime).FillBytes(make([]byte, dhBytes))
	return hkdf.Key(sha256.New, shared, nil, "", 16)
}

func (se *session) encrypt(value []byte) (ssSecret, error) {
	block, err := aes.NewCipher(se.key)
	if err != nil {
		return ssSecret{}, err
	}
	pad := aes.BlockSize - len(value)%aes.BlockSize
	buf := make([]byte, len(value)+pad)
	copy(buf, value)
	for i := len(value); i < len(buf); i++ {
		buf[i] = byte(pad)
	}
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(iv); err != nil {
		return ssSecret{}, err
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf, buf)
	return ssSecret{Session: se.path, Parameters: iv, Value: buf, ContentType: "text/plain"}, nil
}

func (se *session) decrypt(s ssSecret) ([]byte, error) {
	block, err := aes.NewCipher(se.key)
	if err != nil {
		return nil, err
	}
	if len(s.Parameters) != aes.BlockSize || len(s.Value) == 0 || len(s.Value)%aes.BlockSize != 0 {
		return nil, errors.New("the keyring sent a value that is not AES-CBC")
	}
	buf := make([]byte, len(s.Value))
	cipher.NewCBCDecrypter(block, s.Parameters).CryptBlocks(buf, s.Value)
	pad := int(buf[len(buf)-1])
	if pad < 1 || pad > aes.BlockSize || pad > len(buf) {
		return nil, errors.New("the keyring sent a value with bad padding")
	}
	return buf[:len(buf)-pad], nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
