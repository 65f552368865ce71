-- compliance_days.compliant: the endpoints with no update missing past the
-- compliance policy's deadline that day; NULL on days recorded before the
-- policy existed.
ALTER TABLE compliance_days ADD COLUMN compliant INTEGER;
