"""Optional integrations of the companion with external training frameworks.

Each subpackage needs its framework installed (for example ``ddrl.integrations.verl`` needs ``verl``);
the core ``ddrl`` package never imports them.
"""
