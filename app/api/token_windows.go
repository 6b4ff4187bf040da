package api

// checkTokenPlace: the token's folder is in the user's profile, which
// Windows keeps to its user.
func checkTokenPlace(string) (replace bool, err error) { return false, nil }
