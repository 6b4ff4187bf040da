package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"

	"github.com/senclaw/sandbox/app/ownerfile"
)

// keyBytes is the sealing key's length: AES-256.
const keyBytes = 32

// seal encrypts value for name with the key in keyFile, made if missing.
func seal(keyFile, name string, value []byte) ([]byte, error) {
	key, err := loadKey(keyFile, true)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, value, additional(name)), nil
}

// unseal decrypts what seal made for name.
func unseal(keyFile, name string, sealed []byte) ([]byte, error) {
	key, err := loadKey(keyFile, false)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, fmt.Errorf("secret %q: its sealed value is damaged (too short)", name)
	}
	v, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], additional(name))
	if err != nil {
		return nil, fmt.Errorf("secret %q cannot be opened with the key in %s (a different or damaged key): rotate it (senclaw secrets rotate %s)", name, keyFile, name)
	}
	return v, nil
}

// additional binds a sealed value to its secret's name.
func additional(name string) []byte { return []byte("senclaw-secret:" + name) }

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// loadKey reads the sealing key (an ownerfile: a regular file of this
// user's that nobody else may read), or makes it when create is set and
// it is missing.
func loadKey(path string, create bool) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no config dir, so no key to seal secrets with: set XDG_CONFIG_HOME or HOME")
	}
	key, err := ownerfile.Read(path)
	if errors.Is(err, os.ErrNotExist) && create {
		key = make([]byte, keyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		err = ownerfile.Create(path, key)
		if ownerfile.IsExist(err) {
			return loadKey(path, false) // made by another writer meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("creating the secrets key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the secrets key: %w", err)
	}
	if len(key) != keyBytes {
		return nil, fmt.Errorf("the secrets key %s is not %d bytes long: it is damaged", path, keyBytes)
	}
	return key, nil
}
