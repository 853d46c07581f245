package ifplugin

// LinkEventWindow is linkEventWindow, for the tests of the package's users.
const LinkEventWindow = linkEventWindow
