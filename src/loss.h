/* placeholder header, replaced by the implementation */
