package app

// noFollowOpen: Lstat and the file's owner keep the check here (the
// profile's ACL keeps the config folder the owner's).
const noFollowOpen = 0
