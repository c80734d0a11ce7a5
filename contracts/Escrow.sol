// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Ownable} from "./Ownable.sol";

/// @notice The part of {Emission} the escrow needs: its epoch clock.
interface IEpochClock {
    function currentEpoch() external view returns (uint256);
}

/// @title Escrow
/// @notice Consumers deposit native currency and pay providers with vouchers they sign: an
/// EIP-712 `Voucher(consumer, provider, cumulative, seq)` authorizes the provider to be paid up
/// to `cumulative` in total by that consumer. The provider redeems it (`redeemVouchers`) for at
/// most what was signed; the escrow keeps the total paid per consumer–provider pair, so a voucher
/// paid once, or one not above what was already paid, is refused. Every payment emits
/// `Settled(provider, epoch, amount, tokens)` with the epoch of the Emission contract's clock,
/// and `VoucherRedeemed(consumer, provider, epoch, amount, total, seq)`.
/// Withdrawing a deposit takes two steps (`requestWithdrawal`, then `withdrawDeposit` once
/// `withdrawalDelay` has passed), so what a consumer signed stays payable meanwhile.
/// Authorized settlers (an owner-managed set) can also charge a deposit without a voucher
/// (`settle`, `settleBatch`): a trusted path kept for tooling and seeded test networks.
contract Escrow is Ownable {
    /// @notice What a consumer signs (EIP-712): `provider` may be paid up to `cumulative` in
    /// total by `consumer`; `seq` numbers the consumer's vouchers to that provider.
    struct Voucher {
        address consumer;
        address provider;
        uint256 cumulative;
        uint64 seq;
    }

    /// @notice A provider's claim: the voucher, its signature (65 bytes, r ‖ s ‖ v), the new
    /// total paid by the consumer to the provider (at most `voucher.cumulative`), and the tokens
    /// served since the last claim (reported in `Settled`).
    struct Redemption {
        Voucher voucher;
        bytes signature;
        uint256 total;
        uint256 tokens;
    }

    /// @notice One settlement in a batch (trusted settler path).
    struct Settlement {
        address consumer;
        address provider;
        uint256 amount;
        uint256 tokens;
    }

    /// @notice `keccak256("Voucher(address consumer,address provider,uint256 cumulative,uint64 seq)")`.
    bytes32 public constant VOUCHER_TYPEHASH =
        keccak256("Voucher(address consumer,address provider,uint256 cumulative,uint64 seq)");
    /// @notice The EIP-712 domain's name.
    string public constant NAME = "net-consumer Escrow";
    /// @notice The EIP-712 domain's version.
    string public constant VERSION = "1";
    /// @notice Longest withdrawal delay the owner can set.
    uint256 public constant MAX_WITHDRAWAL_DELAY = 30 days;

    bytes32 private constant DOMAIN_TYPEHASH = keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
    );
    /// secp256k1n / 2: a larger `s` is the malleable twin of a valid signature (EIP-2).
    uint256 private constant HALF_ORDER =
        0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    IEpochClock public immutable emission;
    uint256 private immutable _cachedChainId;
    bytes32 private immutable _cachedDomainSeparator;

    mapping(address => uint256) public depositOf;
    mapping(address => uint256) public earningsOf;
    mapping(address => bool) public isSettler;
    /// @notice Total paid by a consumer to a provider through vouchers.
    mapping(address consumer => mapping(address provider => uint256)) public settledOf;
    /// @notice What a consumer asked to withdraw (still payable until withdrawn).
    mapping(address => uint256) public reservedOf;
    /// @notice When a consumer's requested withdrawal unlocks (Unix seconds).
    mapping(address => uint256) public unlockAtOf;
    /// @notice Seconds between `requestWithdrawal` and `withdrawDeposit`.
    uint256 public withdrawalDelay;

    event Deposited(address indexed consumer, address indexed funder, uint256 amount);
    event WithdrawalRequested(address indexed consumer, uint256 amount, uint256 unlockAt);
    event DepositWithdrawn(address indexed consumer, uint256 amount);
    event Charged(address indexed consumer, address indexed provider, uint256 amount);
    event Settled(address indexed provider, uint256 indexed epoch, uint256 amount, uint256 tokens);
    event VoucherRedeemed(
        address indexed consumer,
        address indexed provider,
        uint256 indexed epoch,
        uint256 amount,
        uint256 total,
        uint64 seq
    );
    event EarningsWithdrawn(address indexed provider, uint256 amount);
    event SettlerAdded(address indexed settler);
    event SettlerRemoved(address indexed settler);
    event WithdrawalDelayChanged(uint256 previousDelay, uint256 newDelay);

    error NotSettler(address caller);
    error ZeroAmount();
    error InsufficientDeposit(address consumer, uint256 requested, uint256 available);
    error SettlerAlreadyAdded(address settler);
    error SettlerNotFound(address settler);
    error TransferFailed(address to, uint256 amount);
    error NotVoucherProvider(address caller, address provider);
    error InvalidVoucherSignature(address consumer, address signer);
    error ClaimExceedsVoucher(uint256 total, uint256 cumulative);
    error StaleVoucher(address consumer, address provider, uint256 total, uint256 settled);
    error WithdrawalLocked(address consumer, uint256 unlockAt);
    error ExceedsRequestedWithdrawal(address consumer, uint256 requested, uint256 reserved);
    error WithdrawalDelayTooLong(uint256 delay, uint256 max);

    constructor(address initialOwner, IEpochClock emission_) Ownable(initialOwner) {
        if (address(emission_) == address(0)) revert ZeroAddress();
        emission = emission_;
        withdrawalDelay = 1 days;
        _cachedChainId = block.chainid;
        _cachedDomainSeparator = _buildDomainSeparator();
    }

    modifier onlySettler() {
        if (!isSettler[msg.sender]) revert NotSettler(msg.sender);
        _;
    }

    function addSettler(address settler) external onlyOwner {
        if (settler == address(0)) revert ZeroAddress();
        if (isSettler[settler]) revert SettlerAlreadyAdded(settler);
        isSettler[settler] = true;
        emit SettlerAdded(settler);
    }

    function removeSettler(address settler) external onlyOwner {
        if (!isSettler[settler]) revert SettlerNotFound(settler);
        isSettler[settler] = false;
        emit SettlerRemoved(settler);
    }

    /// @notice Sets the withdrawal delay (at most `MAX_WITHDRAWAL_DELAY`); pending requests keep
    /// the unlock time they were given.
    function setWithdrawalDelay(uint256 delay) external onlyOwner {
        if (delay > MAX_WITHDRAWAL_DELAY) revert WithdrawalDelayTooLong(delay, MAX_WITHDRAWAL_DELAY);
        emit WithdrawalDelayChanged(withdrawalDelay, delay);
        withdrawalDelay = delay;
    }

    function deposit() external payable {
        _deposit(msg.sender);
    }

    function depositFor(address consumer) external payable {
        _deposit(consumer);
    }

    /// @notice Asks to withdraw `amount` (replacing an earlier request; 0 cancels it). It stays
    /// in the deposit, payable to providers, until `withdrawalDelay` has passed.
    function requestWithdrawal(uint256 amount) external {
        uint256 held = depositOf[msg.sender];
        if (amount > held) revert InsufficientDeposit(msg.sender, amount, held);
        uint256 unlockAt = block.timestamp + withdrawalDelay;
        reservedOf[msg.sender] = amount;
        unlockAtOf[msg.sender] = unlockAt;
        emit WithdrawalRequested(msg.sender, amount, unlockAt);
    }

    /// @notice Withdraws up to what was requested, once the request has unlocked.
    function withdrawDeposit(uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        uint256 unlockAt = unlockAtOf[msg.sender];
        if (block.timestamp < unlockAt) revert WithdrawalLocked(msg.sender, unlockAt);
        uint256 held = depositOf[msg.sender];
        uint256 reserved = _min(reservedOf[msg.sender], held);
        if (amount > reserved) revert ExceedsRequestedWithdrawal(msg.sender, amount, reserved);
        reservedOf[msg.sender] = reserved - amount;
        depositOf[msg.sender] = held - amount;
        emit DepositWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    /// @notice A consumer's deposit, the part asked to be withdrawn (`reserved`), what new
    /// spending can count on (`available = deposit − reserved`), and when the request unlocks.
    function accountOf(address consumer)
        external
        view
        returns (uint256 deposit_, uint256 reserved, uint256 available, uint256 unlockAt)
    {
        deposit_ = depositOf[consumer];
        reserved = _min(reservedOf[consumer], deposit_);
        available = deposit_ - reserved;
        unlockAt = unlockAtOf[consumer];
    }

    /// @notice Pays the calling provider what consumers signed: for each redemption, the
    /// difference between `total` and what the pair was already paid. All or nothing.
    function redeemVouchers(Redemption[] calldata redemptions) external {
        uint256 epoch = emission.currentEpoch();
        for (uint256 i = 0; i < redemptions.length; ++i) {
            _redeem(redemptions[i], epoch);
        }
    }

    /// @notice The EIP-712 digest a consumer signs for `voucher`.
    function hashVoucher(Voucher calldata voucher) public view returns (bytes32) {
        bytes32 structHash = keccak256(
            abi.encode(
                VOUCHER_TYPEHASH, voucher.consumer, voucher.provider, voucher.cumulative, voucher.seq
            )
        );
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    /// @notice The EIP-712 domain separator (name, version, chain id, this contract).
    function domainSeparator() public view returns (bytes32) {
        return block.chainid == _cachedChainId ? _cachedDomainSeparator : _buildDomainSeparator();
    }

    /// @notice The EIP-712 domain (EIP-5267).
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", NAME, VERSION, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    /// @notice Charges `consumer` `amount` for `tokens` tokens served by `provider` (trusted).
    function settle(address consumer, address provider, uint256 amount, uint256 tokens)
        external
        onlySettler
    {
        _settle(consumer, provider, amount, tokens, emission.currentEpoch());
    }

    /// @notice Settles many usages in one transaction, all in the current epoch (trusted).
    function settleBatch(Settlement[] calldata settlements) external onlySettler {
        uint256 epoch = emission.currentEpoch();
        for (uint256 i = 0; i < settlements.length; ++i) {
            Settlement calldata s = settlements[i];
            _settle(s.consumer, s.provider, s.amount, s.tokens, epoch);
        }
    }

    function withdrawEarnings() external {
        uint256 amount = earningsOf[msg.sender];
        if (amount == 0) revert ZeroAmount();
        earningsOf[msg.sender] = 0;
        emit EarningsWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    function _deposit(address consumer) private {
        if (consumer == address(0)) revert ZeroAddress();
        if (msg.value == 0) revert ZeroAmount();
        depositOf[consumer] += msg.value;
        emit Deposited(consumer, msg.sender, msg.value);
    }

    function _redeem(Redemption calldata r, uint256 epoch) private {
        Voucher calldata v = r.voucher;
        if (v.provider != msg.sender) revert NotVoucherProvider(msg.sender, v.provider);
        address signer = _recover(hashVoucher(v), r.signature);
        if (signer == address(0) || signer != v.consumer) {
            revert InvalidVoucherSignature(v.consumer, signer);
        }
        if (r.total > v.cumulative) revert ClaimExceedsVoucher(r.total, v.cumulative);
        uint256 paid = settledOf[v.consumer][msg.sender];
        if (r.total <= paid) revert StaleVoucher(v.consumer, msg.sender, r.total, paid);
        uint256 amount = r.total - paid;
        uint256 held = depositOf[v.consumer];
        if (amount > held) revert InsufficientDeposit(v.consumer, amount, held);
        depositOf[v.consumer] = held - amount;
        settledOf[v.consumer][msg.sender] = r.total;
        earningsOf[msg.sender] += amount;
        emit Settled(msg.sender, epoch, amount, r.tokens);
        emit VoucherRedeemed(v.consumer, msg.sender, epoch, amount, r.total, v.seq);
    }

    function _settle(
        address consumer,
        address provider,
        uint256 amount,
        uint256 tokens,
        uint256 epoch
    ) private {
        if (provider == address(0)) revert ZeroAddress();
        uint256 available = depositOf[consumer];
        if (amount > available) revert InsufficientDeposit(consumer, amount, available);
        depositOf[consumer] = available - amount;
        earningsOf[provider] += amount;
        emit Charged(consumer, provider, amount);
        emit Settled(provider, epoch, amount, tokens);
    }

    /// The signer of `digest`, or zero for a signature that is not 65 bytes, has a high `s`
    /// (EIP-2) or a `v` other than 27 or 28.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly ("memory-safe") {
            r := calldataload(signature.offset)
            s := calldataload(add(signature.offset, 32))
            v := byte(0, calldataload(add(signature.offset, 64)))
        }
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _buildDomainSeparator() private view returns (bytes32) {
        return keccak256(
            abi.encode(
                DOMAIN_TYPEHASH, keccak256(bytes(NAME)), keccak256(bytes(VERSION)), block.chainid, address(this)
            )
        );
    }

    function _min(uint256 a, uint256 b) private pure returns (uint256) {
        return a < b ? a : b;
    }

    function _send(address to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert TransferFailed(to, amount);
    }
}
